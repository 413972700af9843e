"""The dynamo level's guards as the server renders them: the lens on `def forward`, the hover on `forward`
and on a line, from guards as the worker reports them (their code as torch's guard log prints it)."""

from fxlens.guard_report import CompiledFrame, DynamicProof, Guard
from fxlens.render.guards import hover_lines, lens_lines, proof_title
from fxlens.render.hover import hover_text
from fxlens.report import ClassReport, FileReport, LevelResult, class_from_json, to_json

DEF, USES_X, BRANCH = 12, 13, 14  # `def forward(self, x, k)`, `y = self.fc(x) * self.k_scale`, `if self.on:`


def _frame() -> CompiledFrame:
    x = Guard(
        "TENSOR_MATCH",
        "L['x']",
        "check_tensor(L['x'], Tensor, DispatchKeySet(Meta, BackendSelect, ADInplaceOrView, AutogradMeta), "
        "torch.float32, device=None, requires_grad=False, size=[4, 16], stride=[16, 1])",
        "x",
        "input",
        USES_X,
        12,
        USES_X,
        22,
        dtype="float32",
        shape=[4, 16],
        stride=[16, 1],
        device="meta",
        requires_grad=False,
    )
    k = Guard("EQUALS_MATCH", "L['k']", "L['k'] == 3", "k", "input", USES_X, value="3")
    on = Guard("TRUE_MATCH", "L['self'].on", "L['self'].on == True", "self.on", "attribute", BRANCH, value="True")
    relu = Guard(
        "ID_MATCH",
        "G['torch'].relu",
        "___check_obj_id(G['torch'].relu, 1399), type=<class 'builtin_function_or_method'>",
        "torch.relu",
        "global",
        BRANCH,
    )
    state = Guard("GLOBAL_STATE", "", "___check_global_state() against {}", state={"grad_mode": False})
    return CompiledFrame("Net.forward", "0/0", DEF, guards=[x, k, on, relu, state])


def _class() -> ClassReport:
    cls = ClassReport("Net", 5, 20)
    cls.levels["dynamo"] = LevelResult("dynamo", True, graphs=1, breaks=0, frames=[_frame()])
    return cls


def test_the_lens_sits_on_def_forward_and_counts_each_role():
    assert lens_lines(_class()) == {
        DEF: "dynamo guards: 5 (2 on inputs, 1 on the module, 1 on globals, 1 on torch's state)"
    }


def test_a_frame_resumed_after_a_break_counts_with_its_function_and_kept_guards_are_counted_too():
    cls = _class()
    cls.levels["dynamo"].frames.append(CompiledFrame("Net.forward", "1/0", None, BRANCH, guards=[], cut=7))
    assert lens_lines(cls)[DEF].startswith("dynamo guards: 12, 2 compiled frames (")


def test_the_hover_on_forward_says_what_recompiles_and_not_fxlens_own_meta_device():
    text = "\n".join(hover_lines(lambda s: f"`{s}`", lambda s: f"**{s}**", _class(), DEF))
    assert "`k` == 3 — recompiles on passing another value" in text
    assert (
        "`x` a float32 tensor [4, 16] — recompiles on another dtype, device or requires_grad, or another size" in text
    )
    assert "meta" not in text
    assert "`self.on` is True — recompiles on assigning another value" in text
    assert "torch's state: grad mode off" in text
    assert "and 1 check that no different call changes (1 ID_MATCH)" in text


def test_the_hover_on_a_line_has_only_that_lines_guards_and_survives_the_wire():
    report = FileReport("/w/net.py", [class_from_json(to_json(_class()))])
    text = hover_text(report, BRANCH, 8)
    assert text is not None and "**dynamo guards** from this line: 2 (1 on torch's own objects and types)" in text
    assert "`self.on` is True" in text and "`k`" not in text
    assert hover_text(report, 18, 0) is None  # no guard, no node: nothing to say


def test_the_proof_reads_as_numbers_in_the_hover_and_the_action_title():
    proof = DynamicProof([["x", [0]]], [[[4]], [[8]]], 1, 0, 0, "", "equal")
    cls = _class()
    cls.levels["dynamo"].dynamic = proof
    text = "\n".join(hover_lines(lambda s: f"`{s}`", lambda s: f"**{s}**", cls, DEF))
    assert "sizes that vary: x.shape[0] 4 → 8" in text and "1 recompile" in text
    assert "`torch._dynamo.mark_dynamic(x, 0)` before the call: 0 recompiles" in text
    assert proof.proven()
    assert proof_title(proof) == (
        "Compile with dynamic=True — recompiles 1 → 0 across x.shape[0] 4 → 8, outputs equal to eager on 2 sizes"
    )
    assert not DynamicProof([["x", [0]]], [[[4]], [[8]]], 1, 0, 0, "", "differ").proven()
    assert not DynamicProof([["x", [0]]], error="RuntimeError: shape '[2, 12]' is invalid").proven()

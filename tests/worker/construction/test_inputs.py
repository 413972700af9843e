"""Inputs fxlens guesses for real-style models with no directive, and the tensors it runs them on.

Every traced class is compared with raw torch (symbolic_trace + ShapeProp, torch.export) on the same
module with inputs of the shapes and dtypes the report gives."""

from __future__ import annotations

import asyncio
import importlib.util
import re
import sys
from pathlib import Path

import pytest
import torch
import torch.fx
from fxlens.engine.worker_client import TraceOptions, WorkerClient
from fxlens.report import ClassReport
from fxlens.worker.construction import consumers, guess_inputs
from fxlens.worker.construction.build import BATCH, SEQUENCE
from fxlens.worker.failures.classify import classify, whole_line
from fxlens.worker.levels import devices
from fxlens.worker.levels import fx as trace_fx
from torch.fx.passes.shape_prop import ShapeProp

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
from torch_nodes import fx_concrete_args

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "inputs"
FILES = ["recurrent_lm", "gru_policy", "hf_style", "needs_values", "wide_gate"]
SIZES = {"B": BATCH, "T": SEQUENCE}


@pytest.fixture(scope="module")
def reports():
    async def analyse_all():
        client = WorkerClient()
        await client.start()
        try:
            return {
                name: await client.analyse(
                    str(FIXTURES / f"{name}.py"), (FIXTURES / f"{name}.py").read_text(), TraceOptions()
                )
                for name in FILES
            }
        finally:
            await client.stop()

    return asyncio.run(analyse_all())


def _cls(reports, file: str, name: str) -> ClassReport:
    found = reports[file].find_class(name)
    assert found is not None, name
    return found


def _module(file: str):
    path = FIXTURES / f"{file}.py"
    spec = importlib.util.spec_from_file_location(path.stem, path)  # the name fxlens gives it
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _inputs(report: ClassReport, device: str) -> tuple:
    """Tensors of the shapes and dtypes the report lists (B and T at their example sizes)."""

    def tensor(shape, dtype):
        dtype = getattr(torch, dtype)
        sizes = [SIZES.get(s, s) for s in shape]
        if dtype.is_floating_point:
            return torch.randn(sizes, device=device, dtype=dtype)
        return torch.zeros(sizes, device=device, dtype=dtype)

    made = []
    for spec in report.build.inputs:
        if spec.shape is not None:
            made.append(tensor(spec.shape, spec.dtype))
        else:  # a tuple of tensors: the report gives each element's shape and dtype
            made.append(tuple(tensor(part.shape, part.dtype) for part in spec.parts))
    return tuple(made)


def _sized(shape):
    """A reported shape at the example sizes; sizes known only at run time (`u0`) stay names."""
    if shape is None:
        return None
    result = []
    for size in shape:
        if isinstance(size, str) and re.fullmatch(r"[BT0-9*+/ -]+", size):
            size = eval(size, {}, dict(SIZES))  # "T*B", "2*B"
        result.append(size)
    return result


def _same_shape(reported, torch_shape) -> bool:
    reported = _sized(reported)
    if reported is None or torch_shape is None:
        return reported == torch_shape
    return len(reported) == len(torch_shape) and all(
        isinstance(r, str) or r == t for r, t in zip(reported, torch_shape)
    )


def _line(stack_trace, path: Path):
    lines = [int(m.group(1)) for m in re.finditer(rf'File "{re.escape(str(path))}", line (\d+)', stack_trace or "")]
    return lines[-1] if lines else None


def _tensor_shape(value):
    if isinstance(value, torch.Tensor):
        return [s if isinstance(s, int) else str(s) for s in value.shape]
    return None


def assert_fx_matches_torch(report: ClassReport, file: str):
    """fx nodes as symbolic_trace makes them, shapes as ShapeProp gives them on the tensors fxlens used
    (meta, or real CPU ones where the meta device cannot run the code)."""
    path = FIXTURES / f"{file}.py"
    cls = getattr(_module(file), report.name)
    device = "meta" if report.build.tensors == "meta" else "cpu"
    with torch.device(device):
        instance = cls()
    tracer = torch.fx.Tracer()
    tracer.record_stack_traces = True
    inputs = _inputs(report, device)
    # the parameters the inputs leave to a constant default are concrete, as HF's tracer does
    gm = torch.fx.GraphModule(instance, tracer.trace(instance, concrete_args=fx_concrete_args(instance, inputs, {})))
    ShapeProp(gm).propagate(*inputs)
    result = report.levels["fx"]
    assert result.ok
    expected = [
        (
            n.name,
            n.op,
            n.target if n.op != "call_function" else n._pretty_print_target(n.target),
            len(n.users),
            _line(n.stack_trace, path),
        )
        for n in gm.graph.nodes
    ]
    assert [(n.name, n.op, n.target, n.num_users, n.line) for n in result.nodes] == [
        (name, op, str(target), users, line) for name, op, target, users, line in expected
    ]
    for ours, theirs in zip(result.nodes, gm.graph.nodes):
        meta = theirs.meta.get("tensor_meta")
        if hasattr(meta, "shape"):
            assert _same_shape(ours.shape, list(meta.shape)), (ours.name, ours.shape, list(meta.shape))


def assert_aten_matches_torch(report: ClassReport, file: str):
    path = FIXTURES / f"{file}.py"
    cls = getattr(_module(file), report.name)
    with torch.device("meta"):
        instance = cls()
    ep = torch.export.export(instance, _inputs(report, "meta"), strict=False)
    result = report.levels["aten"]
    assert result.ok
    expected = [
        (
            n.name,
            n.op,
            str(n.target) if isinstance(n.target, torch._ops.OpOverload) else n._pretty_print_target(n.target),
            len(n.users),
            _line(n.meta.get("stack_trace"), path) if n.op not in ("placeholder", "output") else None,
        )
        for n in ep.graph.nodes
    ]
    assert [(n.name, n.op, n.target, n.num_users, n.line) for n in result.nodes] == expected
    for ours, theirs in zip(result.nodes, ep.graph.nodes):
        assert _same_shape(ours.shape, _tensor_shape(theirs.meta.get("val"))), ours.name


def _specs(report: ClassReport):
    return [(i.name, i.shape, i.dtype) if i.shape is not None else (i.name, i.value) for i in report.build.inputs]


# -- recurrent models ---------------------------------------------------------------------------------


def test_rnn_language_model_gets_sequence_first_ids_and_an_lstm_state(reports):
    lm = _cls(reports, "recurrent_lm", "RecurrentLM")
    assert lm.build.inputs_source == "inferred" and lm.build.tensors == "meta"
    # batch_first=False: (T, B) ids; the hidden state is (h, c), each (num_layers, B, nhid)
    assert _specs(lm) == [
        ("tokens", ["T", "B"], "int64"),
        ("state", "tuple[Tensor(2, B, 48) float32, Tensor(2, B, 48) float32]"),
    ]
    state = lm.build.inputs[1]
    assert [(part.shape, part.dtype) for part in state.parts] == [([2, "B", 48], "float32")] * 2
    decoded = next(n for n in lm.levels["fx"].nodes if n.target == "decoder")
    assert decoded.shape == ["T", "B", 1000]
    assert_fx_matches_torch(lm, "recurrent_lm")
    assert_aten_matches_torch(lm, "recurrent_lm")


def test_gru_policy_follows_batch_first_and_gets_its_state(reports):
    policy = _cls(reports, "gru_policy", "RecurrentPolicy")
    assert _specs(policy) == [("obs", ["B", "T", 12], "float32"), ("rnn_state", [1, "B", 64], "float32")]
    assert_fx_matches_torch(policy, "gru_policy")
    assert_aten_matches_torch(policy, "gru_policy")


def test_a_state_with_a_default_is_left_to_it(reports):
    encoder = _cls(reports, "gru_policy", "BiEncoder")
    assert _specs(encoder) == [("x", ["B", "T", 10], "float32")]
    assert_fx_matches_torch(encoder, "gru_policy")
    assert_aten_matches_torch(encoder, "gru_policy")


def test_embedding_ids_are_in_range_deterministic_and_not_all_zero():
    module = _module("recurrent_lm")
    with torch.device("meta"):
        lm = module.RecurrentLM()
    gm = trace_fx.trace(lm, str(FIXTURES / "recurrent_lm.py"))
    consumer = consumers.first_consumer(gm, lm, "tokens")
    (ids, *_), again = guess_inputs.by_layer(lm, consumer), guess_inputs.by_layer(lm, consumer)[0]
    values = guess_inputs.make(ids)
    assert values.dtype == torch.long and values.shape == (SEQUENCE, BATCH)
    assert 0 <= int(values.min()) and int(values.max()) < lm.vocab and int(values.max()) > 0
    assert torch.equal(values, guess_inputs.make(again))


# -- HuggingFace-style names --------------------------------------------------------------------------


def test_hf_encoder_takes_input_ids_and_leaves_optional_inputs_to_their_defaults(reports):
    bert = _cls(reports, "hf_style", "TinyBertModel")
    assert _specs(bert) == [("input_ids", ["B", "T"], "int64")]
    assert_aten_matches_torch(bert, "hf_style")
    pooled = bert.levels["aten"].nodes[-2]
    assert pooled.target == "aten.tanh.default" and pooled.shape == ["B", 32]


def test_a_required_attention_mask_is_ones_of_the_ids_shape(reports):
    pooler = _cls(reports, "hf_style", "MaskedPooler")
    assert _specs(pooler) == [("input_ids", ["B", "T"], "int64"), ("attention_mask", ["B", "T"], "int64")]
    assert_fx_matches_torch(pooler, "hf_style")
    assert_aten_matches_torch(pooler, "hf_style")
    (mask,) = guess_inputs.by_name("attention_mask", torch.nn.Module(), None)
    assert torch.equal(guess_inputs.make(mask), torch.ones(BATCH, SEQUENCE, dtype=torch.long))
    (positions,) = guess_inputs.by_name("position_ids", torch.nn.Module(), None)
    assert guess_inputs.make(positions)[1].tolist() == list(range(SEQUENCE))


def test_pixel_values_take_the_patch_embedding_channels_and_the_declared_image_size(reports):
    vit = _cls(reports, "hf_style", "TinyViTForImageClassification")
    assert _specs(vit) == [("pixel_values", ["B", 3, 32, 32], "float32")]  # labels left to None
    assert_aten_matches_torch(vit, "hf_style")
    assert vit.levels["aten"].nodes[-2].shape == ["B", 10]


# -- code the meta device cannot run ------------------------------------------------------------------


def test_a_data_dependent_branch_fails_at_its_line_at_both_levels(reports):
    gated = _cls(reports, "needs_values", "GatedResidual")
    assert _specs(gated) == [("x", ["B", 16], "float32")]
    assert gated.build.tensors == "cpu" and "meta device cannot" in gated.build.tensors_reason
    for level in ("fx", "aten"):
        result = gated.levels[level]
        (diagnostic,) = result.diagnostics  # no "could not guess inputs" at the class line
        assert not result.ok and diagnostic.category == "data-dependent-control-flow"
        assert (diagnostic.line, diagnostic.col) == (14, 11)  # `h.sum() > 0`
    assert "GuardOnDataDependentSymNode" in gated.levels["aten"].diagnostics[0].message


def test_a_size_read_with_item_gets_both_levels_with_shapes(reports):
    experts = _cls(reports, "needs_values", "ExpertBuffer")
    assert experts.build.tensors == "fake"
    assert experts.levels["fx"].ok and experts.levels["aten"].ok
    assert not experts.diagnostics()
    buffer = next(n for n in experts.levels["fx"].nodes if n.target == "new_zeros")
    assert buffer.shape == [4, "u0", 16]
    assert_fx_matches_torch(experts, "needs_values")
    assert_aten_matches_torch(experts, "needs_values")


def test_a_distribution_policy_gets_inputs(reports):
    actor = _cls(reports, "needs_values", "GaussianActor")
    assert _specs(actor) == [("obs", ["B", 11], "float32")]
    assert actor.build.tensors == "cpu"
    assert all(d.category != "inputs" for d in actor.diagnostics())


def test_too_wide_for_the_cpu_item_code_runs_on_fake_tensors(reports):
    topk = _cls(reports, "wide_gate", "WideTopK")
    assert topk.build.tensors == "fake"
    assert topk.levels["fx"].ok and topk.levels["aten"].ok
    assert next(n for n in topk.levels["fx"].nodes if n.target == "mean").shape == ["B"]


def test_cpu_factories_export_on_fake_cpu_tensors(reports):
    positions = _cls(reports, "wide_gate", "WidePositions")
    assert positions.build.tensors == "fake" and "factory without `device=`" in positions.build.tensors_reason
    assert positions.levels["fx"].ok and positions.levels["aten"].ok
    assert_fx_matches_torch(positions, "wide_gate")


def test_too_wide_to_run_a_branch_still_reaches_export_and_says_why(reports):
    gate = _cls(reports, "wide_gate", "WideGate")
    assert _specs(gate) == [("x", ["B", 8192], "float32")]
    assert "too many to run on real CPU tensors" in gate.build.tensors_reason
    (aten,) = gate.levels["aten"].diagnostics
    assert aten.category == "data-dependent-control-flow" and aten.line == 13


def test_an_input_too_large_for_the_cpu_is_guessed_on_meta_and_both_levels_match_torch(reports):
    # its guessed input alone is 8 TB: it used to end the whole file as an internal error
    boundless = _cls(reports, "wide_gate", "Boundless")
    assert _specs(boundless) == [("x", ["B", 2**40], "float32")] and boundless.build.tensors == "meta"
    assert not [d for d in reports["wide_gate"].all_diagnostics() if d.category == "internal"]
    assert_fx_matches_torch(boundless, "wide_gate")
    assert_aten_matches_torch(boundless, "wide_gate")


def test_no_meta_device_artefact_is_reported_as_the_users_bug(reports):
    for report in reports.values():
        for diagnostic in report.all_diagnostics():
            artefact = devices.meta_limit(RuntimeError(diagnostic.message)) is not None
            assert not artefact or diagnostic.category == "meta-device", diagnostic


def test_a_limit_no_tensor_can_pass_is_labelled_as_fxlens_own():
    module = _module("wide_gate")
    with torch.device("meta"):
        gate = module.WideGate()
    with pytest.raises(devices.MetaDeviceLimit) as raised:
        devices.run(lambda m, xs: m(*xs), gate, (torch.randn(2, 8192, device="meta"),))
    path = str(FIXTURES / "wide_gate.py")
    lines = (FIXTURES / "wide_gate.py").read_text().splitlines()
    diagnostic = classify(raised.value, path, lines, "inputs", "fx", whole_line(6, lines))
    assert diagnostic.category == "meta-device"
    assert "the meta device cannot read a tensor's value" in diagnostic.message
    assert "directive" in diagnostic.fix


def test_the_header_says_which_tensors_ran():
    from fxlens.render.graph_text import level_text
    from fxlens.report import Build, LevelResult

    report = ClassReport(
        "M",
        1,
        2,
        build=Build("no-arguments", tensors="fake", tensors_reason="the meta device cannot read a tensor's value"),
    )
    report.levels["fx"] = LevelResult("fx", True)
    header, reason = level_text("m.py", report, "fx").splitlines()[:2]
    assert header.startswith("== M (fx) — built: no-arguments, tensors: fake")
    assert reason == "tensors: fake — the meta device cannot read a tensor's value"


def test_a_recurrent_model_run_on_cpu_tensors_is_left_on_meta(reports):
    critic = _cls(reports, "gru_policy", "GuardedCritic")
    assert critic.build.tensors == "cpu"
    (aten,) = critic.levels["aten"].diagnostics
    assert aten.category == "data-dependent-control-flow" and aten.line == 46
    module = _module("gru_policy")
    with torch.device("meta"):
        instance = module.GuardedCritic()
    devices.run(lambda m, xs: m(*xs), instance, (torch.randn(2, 5, 6),), "meta", module.GuardedCritic)
    # an RNN's second list of its weights must not keep the CPU ones once the run is over
    assert {w.device.type for w in instance.gru._flat_weights} == {"meta"}
    assert {p.device.type for p in instance.parameters()} == {"meta"}


def test_graphs_exported_from_meta_or_fake_cpu_tensors_make_a_warm_up_recipe():
    # (the standby child warms up on every recipe on fake CPU tensors, as the aten level exports)
    from fxlens.worker.levels.aten import export
    from fxlens.worker.process.warm_up import recipe

    module = _module("wide_gate")
    with torch.device("meta"):
        positions = module.WidePositions(dim=16)
    x = torch.randn(2, 16, device="meta")
    ran = devices.run(lambda m, xs: export(m, xs, None), positions, (x,))
    assert ran.tensors == "fake" and recipe(ran.value, 0.1) is not None
    with torch.device("meta"):
        plain = torch.nn.Linear(16, 16)
    assert recipe(devices.run(lambda m, xs: export(m, xs, None), plain, (x,)).value, 0.1) is not None


def test_the_class_hover_says_which_tensors_ran(reports):
    from fxlens.render.hover import hover_text

    report = reports["needs_values"]
    experts = _cls(reports, "needs_values", "ExpertBuffer")
    text = hover_text(report, experts.line, 0, markdown=False)
    assert "tensors: fake" in text and "meta device cannot read a tensor's value" in text

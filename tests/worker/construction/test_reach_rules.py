"""Rules that decide reach on code nobody here wrote (issue #22), each checked against raw torch on the
same module: the fx level is `symbolic_trace(module)` (defaults stay placeholders, frozen only where the
plain trace fails), every forward gets inputs (labelled with where each comes from), and directives
see the file's namespace plus `torch`."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from fxlens.report import FileReport
from torch_reference import (
    analyse_together,
    aten_nodes,
    expected,
    first_call_of,
    load,
    op_rows,
    rebuild,
    reported,
    torch_op_rows,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "reach"
FX_ATEN = ("fx", "aten")
# the files the tests below trace (under FIXTURES) and the levels each asks for
TRACED = {
    "forwards": ("forwards.py", FX_ATEN),
    "aliased": ("aliased.py", ("fx",)),
    "asks_for_gpu": ("asks_for_gpu.py", FX_ATEN),
    "stacked": ("stacked.py", ("fx",)),
    "configured": ("configured.py", FX_ATEN),
    "volumes": ("volumes.py", FX_ATEN),
    "wrapped": ("wrapped.py", FX_ATEN),
    "history": ("history.py", FX_ATEN),
    "signals": ("signals.py", FX_ATEN),
}
# files traced again at their aten level with another vocabulary size: the line that sets it
SIZED = {"masked": "vocab_size: int = {}", "signals": "vocab: int = {}"}
# 1,000 words: small enough for real CPU weights; 400,000 (102 M elements): over the CPU limit, CPU weights of
# one value each
VOCABS = (1000, 400_000)


@pytest.fixture(scope="module")
def sized(tmp_path_factory) -> dict[str, Path]:
    """Each SIZED file at each of VOCABS, by "name-vocab", in a folder of its own (under its own name)."""
    files = {}
    for name, line in SIZED.items():
        for vocab in VOCABS:
            path = tmp_path_factory.mktemp(f"{name}-{vocab}") / f"{name}.py"
            path.write_text((FIXTURES / f"{name}.py").read_text().replace(line.format(1000), line.format(vocab)))
            files[f"{name}-{vocab}"] = path
    return files


@pytest.fixture(scope="module")
def reports(sized) -> dict[str, FileReport]:
    """Every file's report, traced by one worker before the first test that reads one (a worker per file
    started an interpreter importing torch for each, and traced one file at a time)."""
    files = {name: (FIXTURES / file, levels) for name, (file, levels) in TRACED.items()}
    return analyse_together(files | {name: (path, ("aten",)) for name, path in sized.items()})


@pytest.fixture(scope="module")
def forwards(reports):
    return reports["forwards"]


@pytest.fixture(scope="module")
def module():
    return load(FIXTURES / "forwards.py")


def test_defaults_stay_placeholders_as_symbolic_trace_makes_them(forwards, module):
    raw = torch.fx.symbolic_trace(module.Gated()).graph
    fx = forwards.find_class("Gated").levels["fx"]
    assert fx.ok and op_rows(fx.nodes) == torch_op_rows(raw)
    assert [n.name for n in fx.nodes if n.op == "placeholder"] == ["x", "scale", "bias"]
    assert not [d for d in fx.diagnostics if d.category == "frozen-argument"] and "frozen" not in fx.note


def test_defaults_are_frozen_only_where_the_plain_trace_fails_and_the_level_says_so(forwards, module):
    with pytest.raises(torch.fx.proxy.TraceError):
        torch.fx.symbolic_trace(module.Switched())
    raw = torch.fx.symbolic_trace(module.Switched(), concrete_args={"use_gate": False}).graph
    fx = forwards.find_class("Switched").levels["fx"]
    assert fx.ok and op_rows(fx.nodes) == torch_op_rows(raw)
    assert fx.note.startswith(
        "defaults frozen: use_gate=False (symbolic_trace fails with them traced as inputs: TraceError"
    )
    assert "concrete_args={'use_gate': False}" in fx.note


def test_every_tensor_input_of_a_multi_input_forward_is_guessed_and_labelled(forwards, module):
    cls = forwards.find_class("Conditioned")
    specs = {spec.name: spec for spec in cls.build.inputs}
    assert list(specs) == ["x", "context", "t_emb", "pos"]
    assert specs["x"].shape == ["B", 32] and specs["context"].shape == ["B", 12]
    assert specs["x"].source == "first used by Linear" and specs["context"].source == "first used by Linear"
    assert specs["t_emb"].source == specs["pos"].source == "no layer consumes it: shaped like `x`"
    # the same module and inputs, traced by torch itself
    inputs = [torch.randn(2, 32), torch.randn(2, 12), torch.randn(2, 32), torch.randn(2, 32)]
    program = torch.export.export(module.Conditioned(), tuple(inputs), strict=False)
    aten = cls.levels["aten"]
    assert aten.ok and [(n.op, n.target) for n in aten.nodes] == [
        (n.op, str(n.target) if n.op == "call_function" else n.target) for n in program.graph.nodes
    ]


def test_a_forward_that_only_measures_its_input_gets_a_small_float_tensor(forwards, module):
    cls = forwards.find_class("Spread")
    [spec] = cls.build.inputs
    assert spec.shape == ["B", 16] and spec.dtype == "float32"
    assert spec.source == "no layer consumes it: a small float tensor"
    program = torch.export.export(module.Spread(), (torch.randn(2, 16),), strict=False)
    assert cls.levels["aten"].ok and len(cls.levels["aten"].nodes) == len(program.graph.nodes)


def test_directives_see_the_files_namespace_plus_torch(reports):
    report = reports["aliased"]
    scale = report.find_class("Scale")
    assert scale.build.how == "directive" and scale.levels["fx"].ok
    assert [spec.shape for spec in scale.build.inputs] == [[2, 5]]
    misbuilt = report.find_class("Misbuilt")
    [error] = [d for d in misbuilt.diagnostics() if d.severity == "error"]
    assert error.category == "construction" and "unknown_factor" in error.message
    assert error.line == next(
        i for i, line in enumerate((FIXTURES / "aliased.py").read_text().splitlines(), 1) if "unknown_factor" in line
    )


def test_code_that_asks_for_a_missing_gpu_builds_and_runs_on_meta_and_says_so(reports):
    path = FIXTURES / "asks_for_gpu.py"
    loaded = load(path)
    if not torch.cuda.is_available():  # what the user meets on this machine without fxlens
        with pytest.raises((AssertionError, RuntimeError)):
            loaded.OnGpu()
    report = reports["asks_for_gpu"]
    lines = path.read_text().splitlines()
    asked = sorted(d.line for d in report.diagnostics if d.category == "default-device")
    if not torch.cuda.is_available():
        # each line that asks; under `with torch.device("cuda"):`, the line inside that makes the tensors
        expected = [i + 1 if "with torch.device" in line else i for i, line in enumerate(lines, 1) if "cuda" in line]
        assert asked == expected
    for name, kinds in (
        ("OnGpu", ["placeholder", "call_method", "call_module", "get_attr", "call_function", "output"]),
        ("InGpuContext", ["placeholder", "call_module", "call_method", "output"]),
    ):
        cls = report.find_class(name)
        assert cls.levels["fx"].ok and cls.levels["aten"].ok, name
        assert [n.op for n in cls.levels["fx"].nodes] == kinds
    # a lazy module is materialised by the first run: torch gives the same graph after one call
    lazy = loaded.Lazy()
    lazy(torch.randn(2, 8))
    raw = torch.export.export(lazy, (torch.randn(2, 8),), strict=False)
    aten = report.find_class("Lazy").levels["aten"]
    assert aten.ok and [str(n.target) for n in aten.nodes if n.op == "call_function"] == [
        str(n.target) for n in raw.graph.nodes if n.op == "call_function"
    ]


def test_a_parents_line_that_only_calls_children_says_what_it_calls(reports):
    from fxlens.render.hover import hover_text

    path = FIXTURES / "stacked.py"
    report = reports["stacked"]
    lines = path.read_text().splitlines()
    loaded = load(path)
    graph = torch.fx.symbolic_trace(loaded.Stack()).graph

    def made_inside(path_prefix):  # torch's own count: nodes created inside that submodule's call
        return sum(
            1
            for n in graph.nodes
            if any(k == path_prefix or k.startswith(path_prefix + ".") for k in n.meta.get("nn_module_stack", {}))
        )

    loop = next(i for i, line in enumerate(lines, 1) if "x = block(x)" in line)
    text = hover_text(report, loop, 12, markdown=False)
    assert text == f"line {loop} calls Block ×3 ({made_inside('blocks.0')} fx nodes each), (B, 24) f32 → (B, 24) f32"
    final = next(i for i, line in enumerate(lines, 1) if "return self.final(x)" in line)
    assert hover_text(report, final, 15, markdown=False) == (
        f"line {final} calls Norm ({made_inside('final')} fx nodes), (B, 24) f32 → (B, 24) f32"
    )
    linked = hover_text(report, loop, 12, markdown=True)
    block_line = report.find_class("Block").line
    assert f"[`Block`]({path.as_uri()}#L{block_line})" in linked


@pytest.fixture(scope="module")
def configured(reports):
    return reports["configured"]


@pytest.mark.parametrize("name", ["TinyEncoder", "TinySeq2Seq", "TimedBlock"])
def test_config_driven_classes_export_as_raw_torch_exports_them(configured, name):
    cls = configured.find_class(name)
    assert cls.levels["aten"].ok, cls.levels["aten"].diagnostics + cls.levels["fx"].diagnostics
    assert reported(cls, "aten") == expected(FIXTURES / "configured.py", configured, cls, "aten")


def test_the_config_class_a_base_names_builds_an_unannotated_config_at_its_defaults(configured):
    # the defaults as written (six layers): a config-built model is the user's model at full size
    cls = configured.find_class("TinySeq2Seq")
    assert (cls.build.how, cls.build.detail) == ("config", "TinySeq2Seq(config=TinyConfig())")
    assert cls.build.directive.startswith("TinySeq2Seq(config=TinyConfig())(")
    instance, _, _ = rebuild(FIXTURES / "configured.py", cls.build.directive)
    assert len(instance.encoder.layers) == len(instance.decoder.layers) == 6
    # its encoder is traced as the instance it built, with what its run passed it
    assert configured.find_class("TinyEncoder").built_by == "TinySeq2Seq"


def test_a_generation_cache_is_turned_off_and_an_encoder_decoder_gets_both_sequences(configured):
    inputs = {spec.name: spec for spec in configured.find_class("TinySeq2Seq").build.inputs}
    assert list(inputs) == ["input_ids", "decoder_input_ids", "use_cache"]
    assert inputs["decoder_input_ids"].keyword and inputs["decoder_input_ids"].shape == ["B", "T"]
    assert inputs["use_cache"].value == "False" and "generation cache" in inputs["use_cache"].source
    assert all(spec.source for spec in inputs.values())


def test_a_time_embedding_that_defaults_to_none_but_is_used_gets_a_value(configured):
    cls = configured.find_class("TimedBlock")
    assert cls.build.detail == "in_channels=32, out_channels=32, temb_channels=32"  # GroupNorm's 32 groups divide them
    (hidden, temb) = cls.build.inputs
    assert (hidden.shape, hidden.source) == (["B", 32, 16, 16], "first used by GroupNorm")
    assert temb.shape == ["B", 32] and "defaults to None, but forward uses it" in temb.source


@pytest.fixture(scope="module")
def volumes(reports):
    return reports["volumes"]


@pytest.mark.parametrize(
    "name,arguments",
    [
        ("Encoder", "spatial_dims=2, in_channels=3, out_channels=16, channels=[16, 16, 16, 16], strides=[1, 1, 1, 1]"),
        ("DeepClassifier", "spatial_dims=2, in_channels=3, num_classes=10, norm='batch'"),
    ],
)
def test_dimension_generic_classes_are_built_as_planes_and_export_as_raw_torch_exports_them(volumes, name, arguments):
    cls = volumes.find_class(name)
    assert (cls.build.how, cls.build.detail) == ("guessed", arguments)
    for level in ("fx", "aten"):
        assert cls.levels[level].ok, cls.levels[level].diagnostics
        assert reported(cls, level) == expected(FIXTURES / "volumes.py", volumes, cls, level)


def test_a_unit_built_by_its_parent_is_traced_as_that_instance(volumes):
    cls = volumes.find_class("ConvUnit")
    assert cls.built_by in ("Encoder", "DeepClassifier") and cls.levels["aten"].ok
    assert reported(cls, "aten") == expected(FIXTURES / "volumes.py", volumes, cls, "aten")


def test_an_image_too_small_for_the_downsampling_is_guessed_larger_and_says_why(volumes):
    (image,) = volumes.find_class("DeepClassifier").build.inputs
    # five halvings: the smallest side the pooling's own checks accept (solve_shapes.py), not a side tried
    assert image.shape == ["B", 3, 32, 32]
    assert image.source == "first used by Conv2d; sizes (2, 3, 32, 32) solved from forward's own checks"


@pytest.fixture(scope="module")
def wrapped(reports):
    return reports["wrapped"]


@pytest.mark.parametrize(
    "name,arguments",
    [
        # a required Module argument: an instance of the annotated class, its own arguments guessed
        ("TokenModel", "num_tokens=100, layers=LayerStack(dim=64, depth=2)"),
        # **kwargs handed on to the base: its required `dim`, and the `depth` its assertion asks for by name
        ("WideStack", "dim=64, depth=2"),
    ],
)
def test_wrappers_get_their_module_and_forwarded_arguments_and_trace_as_raw_torch(wrapped, name, arguments):
    cls = wrapped.find_class(name)
    assert (cls.build.how, cls.build.detail) == ("guessed", arguments)
    assert cls.build.directive.startswith(f"{name}({arguments})(")
    for level in ("fx", "aten"):
        assert cls.levels[level].ok, cls.levels[level].diagnostics
        assert reported(cls, level) == expected(FIXTURES / "wrapped.py", wrapped, cls, level)


@pytest.mark.parametrize("vocab", VOCABS)
def test_children_receive_what_an_eager_run_of_their_parent_hands_them(reports, sized, vocab):
    path = sized[f"masked-{vocab}"]
    attention = reports[f"masked-{vocab}"].find_class("SelfAttention")
    assert attention.built_by == "Decoder"
    # the meta device cannot read the positions; fake tensors would take the library's traced path (a 4-D mask)
    assert {spec.name: spec.value for spec in attention.build.inputs}["mask"] == "None"
    # raw torch: the parent run eagerly on the CPU as a user runs it, the child exported with what it received
    parent = load(path).Decoder()
    args, kwargs = first_call_of(parent, "blocks.0.attn", (torch.zeros(2, 8, dtype=torch.int64),), {})
    assert (args[1:] or [kwargs.get("mask")])[0] is None
    assert attention.levels["aten"].ok
    # (exported on CPU-like tensors: on meta, SDPA's output layout adds a `contiguous` a CPU export has not)
    assert reported(attention, "aten") == aten_nodes(parent.blocks[0].attn, args, kwargs, path)


def test_a_child_keeps_the_list_it_was_called_with_not_what_the_parent_appends_later(reports):
    path = FIXTURES / "history.py"
    report = reports["history"]
    mixer = report.find_class("Accumulate")
    assert mixer.built_by == "HistoryStack" and mixer.levels["aten"].ok
    # the first mixer sees the input alone; the stack appends three more states before its readout runs
    assert [n.name for n in mixer.levels["aten"].nodes if n.op == "placeholder"] == ["x", "hiddens_0"]
    assert reported(mixer, "aten") == expected(path, report, mixer, "aten")


# the encoder compares a plain int(), so no check reaches the solver: the length comes from the error's text
# (a check on the symbolic size is solved instead: test_input_structures' CheckedNorm)
def test_a_forward_whose_error_names_the_length_it_expects_gets_that_length(reports):
    path = FIXTURES / "signals.py"
    report = reports["signals"]
    encoder = report.find_class("FeatureEncoder")
    (features,) = encoder.build.inputs
    assert features.shape == ["B", 16, 96]
    assert features.source.endswith("dim 2 at 96, the size forward's error asks for")
    assert encoder.levels["aten"].ok and reported(encoder, "aten") == expected(path, report, encoder, "aten")


# 1,000 words: real CPU weights confirm the guess; 400,000 (over the CPU limit): the guess stands unconfirmed,
# and the children are recorded on CPU weights of one value each
@pytest.mark.parametrize("vocab", VOCABS)
def test_experts_multiplied_by_grouped_mm_get_inputs_and_export_as_raw_torch(reports, sized, vocab):
    path = sized[f"signals-{vocab}"]
    report = reports[f"signals-{vocab}"]
    model, experts = report.find_class("MixtureModel"), report.find_class("Experts")
    # the meta kernel of `_grouped_mm` wants bf16 where the CPU kernel takes float32: a limit of the device
    assert "cannot run `_grouped_mm` on float32" in model.build.tensors_reason
    assert experts.built_by in ("MixtureModel", "MixtureBlock")
    for cls in (model, experts):
        assert cls.levels["aten"].ok, cls.levels["aten"].diagnostics
        assert reported(cls, "aten") == expected(path, report, cls, "aten")


@pytest.mark.parametrize(
    "message,sizes",
    [
        ("Encoder expects the mel features to be of length 3000, but found 16. Pad them to 3000.", (16, 3000)),
        ("expected sequence length 128, got 8", (8, 128)),
        # a rank is not a size
        ("Expected 4D input (got 3D input)", None),
        ("Expected 3-dimensional input for 3-dimensional weight [8, 3, 3], but got 4-dimensional input", None),
    ],
)
def test_the_size_a_forwards_error_asks_for_is_read_from_its_message(message, sizes):
    from fxlens.worker.construction.resized import named_size

    assert named_size(ValueError(message)) == sizes

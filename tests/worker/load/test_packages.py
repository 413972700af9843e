"""Files of real-looking repositories load the way Python imports them: package-relative and sibling
imports resolve, the edited buffer (and every other open buffer) is the source of its module, and
every node equals what raw torch makes of the same module imported normally."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

import pytest
import pytest_asyncio
from fxlens.engine.worker_client import TraceOptions, WorkerClient
from fxlens.report import FileReport
from fxlens_command import fxlens

# the worker tests share one worker (and its event loop); the CLI tests run their own
on_the_worker = pytest.mark.asyncio(loop_scope="module")

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ROOT / "tests" / "fixtures" / "packages"
RAW_TORCH = ROOT / "tests" / "support" / "raw_torch_nodes.py"

# (repository, file, the module name Python gives it from the repository root, sys.path a user's
# `python -m` / script run has, class with a directive)
CASES = {
    "relative-imports": ("segmentation", "seg/unet/model.py", "seg.unet.model", [""], "UNet"),
    "registry": ("model_zoo", "zoo/resnet.py", "zoo.resnet", [""], "ResNet"),
    "sibling-package": ("rl_baselines", "algos/gaussian_ppo.py", "gaussian_ppo", ["", "algos"], "Policy"),
    "src-layout": ("tinylm_src", "src/tinylm/model.py", "tinylm.model", ["src"], "TinyLM"),
    "src-layout-script": ("tinylm_src", "scripts/distill.py", "distill", ["src", "scripts"], "Student"),
    "namespace-relative": ("detection", "plugins/heads.py", "plugins.heads", [""], "BoxHead"),
    "namespace-absolute": ("detection", "models/detector.py", "detector", ["", "models"], "Detector"),
}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client():
    worker = WorkerClient()
    await worker.start()
    yield worker
    await worker.stop()


async def raw_torch(root: Path, module: str, paths: list[str], class_name: str) -> dict:
    """fx and aten nodes of raw torch, with the repository imported normally in a fresh interpreter (gathered
    with fxlens's trace of the same file: the two take a core each)."""
    request = {"paths": [str(root / p) for p in paths], "module": module, "class": class_name}
    run = await asyncio.create_subprocess_exec(
        sys.executable,
        "-I",
        str(RAW_TORCH),
        json.dumps(request),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=root,
    )
    try:
        stdout, stderr = await asyncio.wait_for(run.communicate(), 300)
    finally:
        if run.returncode is None:
            run.kill()
            await run.wait()
    assert run.returncode == 0, stderr.decode()
    return json.loads(stdout)


def nodes(report: FileReport, class_name: str, level: str) -> list[list]:
    result = report.find_class(class_name).levels[level]
    assert result.ok, result.diagnostics
    return [[n.name, n.op, n.target, n.num_users, n.line, n.shape, n.dtype] for n in result.nodes]


def load_errors(report: FileReport) -> list:
    return [d for d in report.diagnostics if d.category in ("load", "syntax")]


def copy_repository(name: str, into: Path) -> Path:
    return Path(shutil.copytree(PACKAGES / name, into / name, ignore=shutil.ignore_patterns("__pycache__")))


@on_the_worker
@pytest.mark.parametrize("case", CASES)
async def test_a_package_file_loads_and_its_nodes_equal_raw_torch(client, case):
    repository, file, module, paths, class_name = CASES[case]
    root = PACKAGES / repository
    path = root / file
    report, expected = await asyncio.gather(
        client.analyse(str(path), path.read_text(), TraceOptions(), roots=[str(root)]),
        raw_torch(root, module, paths, class_name),
    )
    assert load_errors(report) == []
    assert expected["file"] == str(path)
    assert nodes(report, class_name, "fx") == expected["fx"]
    assert nodes(report, class_name, "aten") == expected["aten"]


@on_the_worker
async def test_the_package_imports_the_edited_module_once_from_the_buffer(client, tmp_path):
    """zoo/__init__ imports zoo.resnet, whose builders register themselves and refuse a second
    registration; the buffer's edit (not the disk) is what the package and fxlens both see."""
    disk = copy_repository("model_zoo", tmp_path / "disk")
    path = disk / "zoo" / "resnet.py"
    edited = (
        path.read_text()
        .replace("x = torch.flatten(x, 1)", "x = torch.flatten(x, 1).tanh()")
        .replace(
            "# fxlens: ResNet(", "# fxlens: (ResNet if zoo.get_model('resnet_tiny').__class__ is ResNet else None)("
        )
    )
    edited = edited.replace(
        "from ._registry import register_model", "import zoo\nfrom ._registry import register_model"
    )
    saved = copy_repository("model_zoo", tmp_path / "saved")
    (saved / "zoo" / "resnet.py").write_text(edited)
    report, expected = await asyncio.gather(
        client.analyse(str(path), edited, TraceOptions(), roots=[str(disk)]),
        raw_torch(saved, "zoo.resnet", [""], "ResNet"),
    )
    assert load_errors(report) == []
    fx, aten = nodes(report, "ResNet", "fx"), nodes(report, "ResNet", "aten")
    assert fx == expected["fx"] and "tanh" in [n[2] for n in fx]
    assert aten == expected["aten"] and "aten.tanh.default" in [n[2] for n in aten]


@on_the_worker
async def test_the_edited_file_keeps_the_safe_policy_when_its_package_imports_it(client, tmp_path):
    disk = copy_repository("model_zoo", tmp_path)
    path = disk / "zoo" / "resnet.py"
    marker = tmp_path / "ran"
    edited = path.read_text().replace("__all__ =", f"open({str(marker)!r}, 'w').close()\n__all__ =")
    report = await client.analyse(str(path), edited, TraceOptions(), roots=[str(disk)])
    assert load_errors(report) == [] and not marker.exists()
    line = edited.splitlines().index(f"open({str(marker)!r}, 'w').close()") + 1
    assert [(d.line, d.category) for d in report.diagnostics] == [(line, "not-executed")]
    assert report.find_class("ResNet").levels["fx"].ok


@on_the_worker
async def test_an_unsaved_buffer_of_an_imported_module_shows_in_the_graph(client, tmp_path):
    """blocks.py is open with an unsaved edit: model.py's graph is built from it."""
    disk = copy_repository("segmentation", tmp_path / "disk")
    parts = disk / "seg" / "unet" / "blocks.py"
    edited = parts.read_text().replace("        return self.body(x)", "        return self.body(x) * 0.5")
    model = disk / "seg" / "unet" / "model.py"
    saved = copy_repository("segmentation", tmp_path / "saved")
    (saved / "seg" / "unet" / "blocks.py").write_text(edited)
    report, expected = await asyncio.gather(
        client.analyse(str(model), model.read_text(), TraceOptions(), roots=[str(disk)], buffers={str(parts): edited}),
        raw_torch(saved, "seg.unet.model", [""], "UNet"),
    )
    assert load_errors(report) == []
    fx = nodes(report, "UNet", "fx")
    assert fx == expected["fx"] and nodes(report, "UNet", "aten") == expected["aten"]
    assert sum(n[2] == "operator.mul" for n in fx) == 7  # one per ConvStage: the stem, 3 contractions, 3 expansions


@on_the_worker
async def test_the_fingerprint_follows_the_text_of_an_imported_buffer(client, tmp_path):
    disk = copy_repository("segmentation", tmp_path)
    parts = disk / "seg" / "unet" / "blocks.py"
    model = disk / "seg" / "unet" / "model.py"
    options, roots = TraceOptions(levels=("fx",)), [str(disk)]

    async def trace(parts_text=None, known=None):
        buffers = {str(parts): parts_text} if parts_text is not None else {}
        return await client.analyse(str(model), model.read_text(), options, known=known, roots=roots, buffers=buffers)

    first = await trace()
    known = {"UNet": first.find_class("UNet").fingerprint}
    assert known["UNet"]
    opened = await trace(parts.read_text(), known)  # opening a file is not a change
    assert opened.unchanged == ["UNet"]
    halved = parts.read_text().replace("        return self.body(x)", "        return self.body(x) * 0.5")
    edited = await trace(halved, known)
    assert edited.unchanged == [] and edited.find_class("UNet").fingerprint != known["UNet"]
    assert "operator.mul" in [n.target for n in edited.find_class("UNet").levels["fx"].nodes]
    again = await trace(halved, {"UNet": edited.find_class("UNet").fingerprint})
    assert again.unchanged == ["UNet"]


@on_the_worker
async def test_a_file_of_an_installed_package_traces_in_place(client):
    import transformers.models.llama.modeling_llama as llama

    path = llama.__file__
    text = Path(path).read_text()
    directive = (
        "# fxlens: LlamaForCausalLM(LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, "
        "num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64))"
        "(torch.zeros(2, 8, dtype=torch.long){})\n"
    )
    at = text.index("class LlamaForCausalLM")
    at = text.rindex("\n\n", 0, at) + 2  # above its decorators
    report = await client.analyse(path, text[:at] + directive.format(", use_cache=False") + text[at:], TraceOptions())
    assert load_errors(report) == []
    causal = report.find_class("LlamaForCausalLM")
    assert causal.build.how == "directive" and causal.levels["aten"].ok
    for cls in report.classes:  # every class: a graph, or a failure that says what to do
        for level, result in cls.levels.items():
            assert result.ok or all(
                d.category not in ("trace", "load") and d.fix for d in result.diagnostics if d.severity == "error"
            ), (cls.name, level, result.diagnostics)
    for name in ("LlamaRMSNorm", "LlamaMLP", "LlamaDecoderLayer", "LlamaModel"):
        cls = report.find_class(name)  # the instances the directive's model built, with the inputs they got
        assert cls.built_by in ("LlamaForCausalLM", "LlamaModel") and cls.levels["aten"].ok, name

    # (the class asserted on, alone: the file's other classes were traced above, and the guessed builds of
    # the large ones run to the trace's deadline again)
    cached = await client.analyse(
        path, text[:at] + directive.format("") + text[at:], TraceOptions(levels=("aten",)), classes=[causal.name]
    )
    (failure,) = cached.find_class("LlamaForCausalLM").levels["aten"].diagnostics
    assert failure.category == "unsupported-type" and "use_cache=False" in failure.fix


def test_the_cli_imports_from_the_current_directory_and_its_src():
    run = fxlens("graph", "scripts/distill.py", "--class", "Student", "--level", "fx", cwd=PACKAGES / "tinylm_src")
    assert run.returncode == 0, run.stderr
    assert "%lm_embed : [num_users=3] = call_module[target=lm.embed](args = (%tokens,), kwargs = {})" in run.stdout


def test_the_cli_reports_a_file_that_fails_to_load_as_that_error(tmp_path):
    script = PACKAGES / "tinylm_src" / "scripts" / "distill.py"
    run = fxlens("graph", str(script), cwd=tmp_path)  # not the repository's root: `tinylm` is not importable
    assert run.returncode == 2
    assert f"{script}:5:1: error: ModuleNotFoundError: No module named 'tinylm' [load]" in run.stderr
    assert "run fxlens from your project's root" in run.stderr and "no nn.Module class" not in run.stderr


@on_the_worker
async def test_an_imported_buffer_that_does_not_parse_fails_the_import_line_not_this_file(client, tmp_path):
    disk = copy_repository("segmentation", tmp_path)
    parts = disk / "seg" / "unet" / "blocks.py"
    model = disk / "seg" / "unet" / "model.py"
    half_typed = parts.read_text().replace("        return self.body(x)", "        return self.body(x")
    report = await client.analyse(
        str(model), model.read_text(), TraceOptions(), roots=[str(disk)], buffers={str(parts): half_typed}
    )
    (error,) = report.diagnostics
    assert (error.category, error.line) == ("load", 6)  # `from .blocks import Contract, ConvStage, Expand`
    assert error.message.startswith(f"ImportError: {parts}:") and "SyntaxError" in error.message


@on_the_worker
async def test_a_buffer_reached_through_an_import_of_an_import_counts_too(client, tmp_path):
    """model.py imports blocks.py, which imports seg.utils: an unsaved edit of utils.py is in UNet's graph."""
    disk = copy_repository("segmentation", tmp_path)
    utils = disk / "seg" / "utils.py"
    model = disk / "seg" / "unet" / "model.py"
    options, roots = TraceOptions(levels=("fx",)), [str(disk)]
    first = await client.analyse(
        str(model), model.read_text(), options, roots=roots, buffers={str(utils): utils.read_text()}
    )
    known = {"UNet": first.find_class("UNet").fingerprint}
    negated = utils.read_text().replace("    return F.pad(x, [", "    return -F.pad(x, [")
    edited = await client.analyse(
        str(model), model.read_text(), options, known=known, roots=roots, buffers={str(utils): negated}
    )
    assert edited.unchanged == []
    assert [n.target for n in edited.find_class("UNet").levels["fx"].nodes].count("operator.neg") == 3


@on_the_worker
async def test_a_buffer_the_class_does_not_reach_leaves_its_trace_standing(client, tmp_path):
    """zoo/mlp.py changes; zoo/resnet.py's classes use nothing of it (the package imports both)."""
    disk = copy_repository("model_zoo", tmp_path)
    mlp, resnet = disk / "zoo" / "mlp.py", disk / "zoo" / "resnet.py"
    options, roots = TraceOptions(levels=("fx",)), [str(disk)]
    first = await client.analyse(
        str(resnet), resnet.read_text(), options, roots=roots, buffers={str(mlp): mlp.read_text()}
    )
    known = {c.name: c.fingerprint for c in first.classes}
    edited = mlp.read_text().replace("nn.ReLU(inplace=True)", "nn.GELU()")
    again = await client.analyse(
        str(resnet), resnet.read_text(), options, known=known, roots=roots, buffers={str(mlp): edited}
    )
    assert sorted(again.unchanged) == ["BasicBlock", "ResNet"]

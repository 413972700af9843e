"""Failures real model code hits: each gets a category, a plain explanation and a fix, at the line and
column torch's own traceback gives; and each fix, applied to the file as its text says, traces."""

from __future__ import annotations

import asyncio
import importlib.util
import re
import sys
import traceback
from pathlib import Path

import pytest
import torch
import torch.fx
from fxlens.engine.worker_client import TraceOptions, WorkerClient

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures" / "failures_real"
FILES = ("einops_vit", "vit_grid", "dit_blocks", "policies", "hf_decoder", "masks")


def _fixed(name: str, *edits: tuple[str, str]) -> str:
    text = (FIXTURES / f"{name}.py").read_text()
    for old, new in edits:
        assert old in text, f"{name}: {old!r} is not in the fixture"
        text = text.replace(old, new, 1)
    return text


WRAP_EINOPS = (
    "from einops.layers.torch import Rearrange\n",
    "from einops.layers.torch import Rearrange\n\ntorch.fx.wrap('rearrange')\ntorch.fx.wrap('repeat')\n",
)
# each fix as its text says, applied to the fixture
FIXED = {
    "einops_wrapped": _fixed("einops_vit", WRAP_EINOPS),
    "einops_unpacked": _fixed(
        "einops_vit",
        WRAP_EINOPS,
        (
            "q, k, v = map(lambda t: rearrange(t, 'b n (h d) -> b h n d', h=self.heads), qkv)",
            "q, k, v = qkv\n        q, k, v = map(lambda t: rearrange(t, 'b n (h d) -> b h n d', h=self.heads), "
            "(q, k, v))",
        ),
    ),
    "einops_unpacked_only": _fixed(
        "einops_vit",
        (
            "q, k, v = map(lambda t: rearrange(t, 'b n (h d) -> b h n d', h=self.heads), qkv)",
            "q, k, v = qkv\n        q, k, v = map(lambda t: rearrange(t, 'b n (h d) -> b h n d', h=self.heads), "
            "(q, k, v))",
        ),
    ),
    "einops_layer_as_function": _fixed(
        "einops_vit",
        WRAP_EINOPS,
        ("            Rearrange('b c (h p1) (w p2) -> b (h w) (p1 p2 c)', p1=patch_size, p2=patch_size),\n", ""),
        (
            "        x = self.to_patch_embedding(img)",
            "        x = rearrange(img, 'b c (h p1) (w p2) -> b (h w) (p1 p2 c)', p1=8, p2=8)\n"
            "        x = self.to_patch_embedding(x)",
        ),
    ),
    "grid_wrapped": _fixed(
        "vit_grid",
        (
            "from torch import nn\n",
            "from torch import nn\n\n\ndef grid_side(n):\n    return int(n ** 0.5)\n\n\ntorch.fx.wrap('grid_side')\n",
        ),
        ("h = w = int(n ** 0.5)", "h = w = grid_side(n)"),
        ("scale = 1.0 / float(q.shape[-1]) ** 0.5", "scale = q.shape[-1] ** -0.5"),
    ),
    "grid_from_init": _fixed(
        "vit_grid",
        (
            "self.norm = nn.LayerNorm(dim)",
            "self.norm = nn.LayerNorm(dim)\n        self.grid = 4  # image_size // patch_size",
        ),
        ("h = w = int(n ** 0.5)", "h = w = self.grid"),
    ),
    "factories_tuple": _fixed(
        "dit_blocks",
        (
            "torch.zeros(x.shape[0], 1, x.shape[2], device=x.device)",
            "torch.zeros((x.shape[0], 1, x.shape[2]), device=x.device)",
        ),
        (
            "torch.randn(c.shape[0], c.shape[1], device=c.device)",
            "torch.randn((c.shape[0], c.shape[1]), device=c.device)",
        ),
        ("torch.tensor(x.shape[1], dtype=torch.float32)", "torch.scalar_tensor(x.shape[1], dtype=torch.float32)"),
    ),
    "factories_like": _fixed(
        "dit_blocks",
        ("torch.zeros(x.shape[0], 1, x.shape[2], device=x.device)", "x.new_zeros(x.shape[0], 1, x.shape[2])"),
        ("torch.randn(c.shape[0], c.shape[1], device=c.device)", "torch.randn_like(c)"),
    ),
    "agent_forward": _fixed(
        "policies",
        (
            "    def get_value(self, x):",
            "    def forward(self, x):\n        return self.get_value(x)\n\n    def get_value(self, x):",
        ),
    ),
    "policies_unvalidated": _fixed(
        "policies",
        (
            "Categorical(logits=logits)\n        return probs.probs",
            "Categorical(logits=logits, validate_args=False)\n        return probs.probs",
        ),
        ("Normal(action_mean, action_std)", "Normal(action_mean, action_std, validate_args=False)"),
    ),
    "policies_wrapped": _fixed(
        "policies",
        (
            "def layer_init(",
            "def policy_outputs(logits):\n"
            "    d = Categorical(logits=logits, validate_args=False)\n"
            "    return d.probs, d.entropy()\n\n\n"
            "def gaussian_outputs(mean, std):\n"
            "    d = Normal(mean, std, validate_args=False)\n"
            "    return d.mean, d.entropy().sum(1)\n\n\n"
            "torch.fx.wrap('policy_outputs')\ntorch.fx.wrap('gaussian_outputs')\n\n\n"
            "def layer_init(",
        ),
        (
            "        probs = Categorical(logits=logits)\n        return probs.probs, probs.entropy()",
            "        return policy_outputs(logits)",
        ),
        (
            "        probs = Normal(action_mean, action_std)\n        return probs.mean, probs.entropy().sum(1)",
            "        return gaussian_outputs(action_mean, action_std)",
        ),
    ),
    "masks_wrapped": _fixed(
        "masks", ("\n\n# fxlens: MaskedScores", "\n\ntorch.fx.wrap('causal_mask')\n\n\n# fxlens: MaskedScores")
    ),
}


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("failures_real")
    texts = {name: (FIXTURES / f"{name}.py", (FIXTURES / f"{name}.py").read_text()) for name in FILES}
    for name, text in FIXED.items():
        path = folder / f"{name}.py"
        path.write_text(text)
        texts[name] = (path, text)

    async def analyse_all():
        client = WorkerClient()
        await client.start()
        try:
            return {name: await client.analyse(str(path), text, TraceOptions()) for name, (path, text) in texts.items()}
        finally:
            await client.stop()

    return asyncio.run(analyse_all())


def _torch_location(file: str, class_name: str) -> tuple[int, int]:
    """Where raw symbolic_trace's traceback says the class fails: the innermost frame of the file, with
    the column of its instruction."""
    path = FIXTURES / f"{file}.py"
    spec = importlib.util.spec_from_file_location(f"_raw_{file}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with torch.device("meta"):
        directive = re.search(rf"# fxlens: (\w+\(.*?\))\(.*\n(?:#.*\n)*class {class_name}\b", path.read_text())
        instance = eval(directive.group(1), vars(module)) if directive else getattr(module, class_name)()
    with pytest.raises(Exception) as caught:
        torch.fx.symbolic_trace(instance)
    frames = [f for f in traceback.walk_tb(caught.value.__traceback__) if f[0].f_code.co_filename == str(path)]
    frame, lineno = frames[-1]
    position = list(frame.f_code.co_positions())[frame.f_lasti // 2] if sys.version_info >= (3, 11) else None
    return lineno, position[2] if position else None


def _line_of(file: str, needle: str) -> int:
    lines = (FIXTURES / f"{file}.py").read_text().splitlines()
    return next(i for i, text in enumerate(lines, 1) if needle in text)


# (file, class, category, a phrase the fix must say)
FX_FAILURES = [
    ("einops_vit", "Attention", "map-over-proxy", "q, k, v = map(fn, (q, k, v))"),
    ("einops_vit", "MergeHeads", "einops-on-proxy", "torch.fx.wrap('rearrange')"),
    ("einops_vit", "ClassToken", "einops-on-proxy", "torch.fx.wrap('repeat')"),
    ("einops_vit", "PatchEmbedding", "einops-on-proxy", "x = rearrange(x, "),
    ("vit_grid", "TokensToMap", "proxy-as-number", "torch.fx.wrap"),
    ("vit_grid", "ScaledDot", "proxy-as-number", "q.shape[-1] ** -0.5"),
    ("dit_blocks", "NullClassPad", "factory-with-traced-size", "torch.zeros((x.shape[0], 1), device=x.device)"),
    ("dit_blocks", "NoiseAugment", "factory-with-traced-size", "torch.randn_like(x)"),
    ("dit_blocks", "LengthScaledPool", "factory-with-traced-size", "torch.scalar_tensor(x.shape[1]"),
    ("policies", "CategoricalPolicy", "distribution-on-proxy", "validate_args=False"),
    ("policies", "GaussianPolicy", "distribution-on-proxy", "torch.fx.wrap"),
    ("masks", "MaskedScores", "proxy-as-dtype", "torch.fx.wrap('<function name>')"),
]


@pytest.mark.parametrize("file,class_name,category,fix", FX_FAILURES)
def test_fx_failure_has_category_line_column_and_fix(reports, file, class_name, category, fix):
    result = reports[file].find_class(class_name).levels["fx"]
    assert not result.ok
    (diagnostic,) = result.diagnostics
    assert diagnostic.category == category
    assert (diagnostic.line, diagnostic.col) == _torch_location(file, class_name)
    assert diagnostic.explanation and fix in diagnostic.fix


@pytest.mark.parametrize(
    "fixed,classes",
    [
        ("einops_wrapped", ["MergeHeads", "ClassToken"]),
        ("einops_unpacked", ["Attention"]),
        ("einops_layer_as_function", ["PatchEmbedding"]),
        ("grid_wrapped", ["TokensToMap", "ScaledDot"]),
        ("grid_from_init", ["TokensToMap"]),
        ("factories_tuple", ["NullClassPad", "NoiseAugment", "LengthScaledPool"]),
        ("factories_like", ["NullClassPad", "NoiseAugment"]),
        ("agent_forward", ["Agent"]),
        ("policies_wrapped", ["CategoricalPolicy", "GaussianPolicy"]),
        ("masks_wrapped", ["MaskedScores"]),
    ],
)
def test_the_fx_fix_applied_traces(reports, fixed, classes):
    for class_name in classes:
        result = reports[fixed].find_class(class_name).levels["fx"]
        assert result.ok and not [d for d in result.diagnostics if d.severity == "error"], class_name
        assert [n for n in result.nodes if n.op not in ("placeholder", "output")], class_name


def test_map_fix_alone_leads_to_the_einops_fix(reports):
    """Unpacking first is what fx needs for the map; the einops call on the same line is next."""
    (diagnostic,) = reports["einops_unpacked_only"].find_class("Attention").levels["fx"].diagnostics
    assert diagnostic.category == "einops-on-proxy" and "torch.fx.wrap('rearrange')" in diagnostic.fix


@pytest.mark.parametrize("file,class_name", [(f, c) for f, c, _, fix in FX_FAILURES])
def test_fix_saying_the_aten_level_traces_is_true(reports, file, class_name):
    report = reports[file].find_class(class_name)
    (diagnostic,) = report.levels["fx"].diagnostics
    if "aten level" in diagnostic.fix and "validate_args" not in diagnostic.fix:
        assert report.levels["aten"].ok


def test_distributions_at_aten_need_validate_args_off(reports):
    for class_name in ("CategoricalPolicy", "GaussianPolicy"):
        (diagnostic,) = reports["policies"].find_class(class_name).levels["aten"].diagnostics
        assert diagnostic.category == "distribution-on-proxy" and "validate_args=False" in diagnostic.fix
        assert reports["policies_unvalidated"].find_class(class_name).levels["aten"].ok


def test_class_without_forward_is_told_to_define_one_not_another_level(reports):
    agent = reports["policies"].find_class("Agent")
    for level in ("fx", "aten"):
        result = agent.levels[level]
        assert not result.ok
        diagnostic = result.diagnostics[0]
        assert diagnostic.category == "no-forward" and diagnostic.line == _line_of("policies", "class Agent")
        assert "def forward(self, x): return self.get_value(x)" in diagnostic.fix
        assert "aten" not in diagnostic.fix
    fixed = reports["agent_forward"].find_class("Agent")
    assert fixed.levels["fx"].ok and fixed.levels["aten"].ok


def test_llama_decoder_layer_itself_fails_alike_and_exports(reports):
    layer = reports["hf_decoder"].find_class("LlamaLayerWithScale")
    (diagnostic,) = layer.levels["fx"].diagnostics
    assert diagnostic.category == "decorated-forward" and "aten level" in diagnostic.fix
    assert layer.levels["aten"].ok  # its forward lives in transformers: no line of this file to point at


def test_decorated_hf_forward_points_at_the_decorator_and_the_aten_level_traces(reports):
    layer = reports["hf_decoder"].find_class("TinyDecoderLayer")
    (diagnostic,) = layer.levels["fx"].diagnostics
    assert diagnostic.category == "decorated-forward"
    assert diagnostic.message == "ValueError: code: co_varnames is too small"
    assert diagnostic.line == _line_of("hf_decoder", "@deprecate_kwarg")
    assert "aten level" in diagnostic.fix
    aten = layer.levels["aten"]
    assert aten.ok and any(
        n.target == "aten.scaled_dot_product_attention.default" or "matmul" in n.target or "linear" in n.target
        for n in aten.nodes
    )


def test_messages_are_whole(reports):
    (diagnostic,) = reports["einops_vit"].find_class("Attention").levels["fx"].diagnostics
    assert diagnostic.message.endswith("help troubleshooting Proxy iteration errors")
    (factory,) = reports["dit_blocks"].find_class("NoiseAugment").levels["fx"].diagnostics
    assert "expected one of:" in factory.message and factory.message.rstrip().endswith(")")


UNKNOWN = """import torch
from torch import nn


# fxlens: Misnamed()(torch.randn(2, 4))
class Misnamed(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x) * self.scale
"""


def test_an_error_no_rule_knows_still_says_what_raised_where_and_a_fix(tmp_path):
    path = tmp_path / "unknown.py"
    path.write_text(UNKNOWN)

    async def analyse():
        client = WorkerClient()
        await client.start()
        try:
            return await client.analyse(str(path), UNKNOWN, TraceOptions())
        finally:
            await client.stop()

    report = asyncio.run(analyse()).find_class("Misnamed")
    for level in ("fx", "aten"):
        (diagnostic,) = report.levels[level].diagnostics
        assert diagnostic.line == 12 and diagnostic.category == "trace"
        assert "AttributeError" in diagnostic.explanation and "'scale'" in diagnostic.message
        assert diagnostic.fix and "aten level" not in diagnostic.fix

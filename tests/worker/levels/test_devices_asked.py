"""The device the code asks for, through the real worker, against raw torch on a real CPU build.

Tensors made in forward without `device=` (`torch.arange(T)`, `torch.ones(T, T).tril()`) are CPU tensors for
the user, beside a module fxlens builds on meta; `torch.set_default_device("cuda")` asks for a device this
machine may lack. Every level must give the nodes torch gives on the CPU, and say what fxlens did instead.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from pathlib import Path
from unittest import mock

import pytest
import torch
import torch._dynamo
from fxlens.report import LEVELS
from torch._functorch.aot_autograd import aot_export_joint_with_descriptors
from torch._functorch.partitioners import min_cut_rematerialization_partition
from torch_reference import analyse_one

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "bench"))
from torch_nodes import export_rows  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "devices"
CONSTANTS, DEFAULT_CUDA = FIXTURES / "constants.py", FIXTURES / "default_cuda.py"
# the directive's call of each class: (constructor arguments, input)
CALLS = {
    "SinusoidalPositions": ((16,), lambda: torch.randn(2, 8, 16)),
    "CausalSelfAttention": ((16,), lambda: torch.randn(2, 8, 16)),
    "TokenModel": ((), lambda: torch.zeros(2, 8, dtype=torch.long)),
    "Block": ((16,), lambda: torch.randn(2, 8, 16)),
    "SetsItsOwn": ((4,), lambda: torch.randn(2, 4)),
    "After": ((4,), lambda: torch.randn(2, 4)),
}
CONSTANT_CLASSES = ["SinusoidalPositions", "CausalSelfAttention", "TokenModel"]
CUDA_CLASSES = ["Block", "SetsItsOwn", "After"]


@pytest.fixture(scope="module")
def constants():
    return analyse_one(CONSTANTS, tuple(LEVELS), execution="full")


@pytest.fixture(scope="module")
def default_cuda():
    return analyse_one(DEFAULT_CUDA, tuple(LEVELS), execution="full")


def _user_module(path: Path):
    """The file as a user on this CPU-only machine can run it: torch's default device stays the CPU."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    with mock.patch.object(torch, "set_default_device", lambda device: None):
        spec.loader.exec_module(module)
    return module


def _on_cpu(path: Path, name: str):
    args, make_input = CALLS[name]
    with mock.patch.object(torch, "set_default_device", lambda device: None):
        return getattr(_user_module(path), name)(*args), make_input()


def _rows(result):
    return [(n.name, n.op, n.target, n.num_users, n.line, n.shape, n.dtype) for n in result.nodes]


def _texts(nodes):
    return [n.format_node() for n in nodes]


def _check_levels(report, path: Path, name: str) -> None:
    cls = report.find_class(name)
    instance, x = _on_cpu(path, name)
    program = torch.export.export(instance, (x,), strict=False)
    for level in ("aten", "core-aten", "backward", "dynamo"):
        assert cls.levels[level].ok, (level, cls.levels[level].diagnostics)
    # the nodes torch makes on the CPU, `device=cpu` arguments of the factories included
    assert _rows(cls.levels["aten"]) == export_rows(program, str(path))
    assert [n.text for n in cls.levels["aten"].nodes] == _texts(program.graph.nodes)
    decomposed = torch.export.export(instance, (x,), strict=False).run_decompositions()
    assert _rows(cls.levels["core-aten"]) == export_rows(decomposed, str(path))
    assert sorted((n.name, n.shape) for n in cls.levels["backward"].nodes if n.saved) == _torch_saved(instance, x)
    graphs = cls.levels["dynamo"]
    assert [[n.op, n.target] for n in graphs.nodes] == _raw_dynamo(instance, x)


class _SumLoss(torch.nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return self.inner(x).sum()


def _torch_saved(instance, x):
    with contextlib.ExitStack() as stack:
        joint = aot_export_joint_with_descriptors(stack, _SumLoss(instance), (x,)).graph_module
        forward, _ = min_cut_rematerialization_partition(joint, None, compiler="inductor", num_fwd_outputs=1)
    output = next(iter(forward.graph.find_nodes(op="output")))
    return sorted((n.name, list(n.meta["val"].shape)) for n in output.args[0][1:])


def _raw_dynamo(instance, x):
    torch._dynamo.reset()
    try:
        explained = torch._dynamo.explain(instance)(x)
    finally:
        torch._dynamo.reset()
    return [
        [n.op, n._pretty_print_target(n.target) if n.op == "call_function" else str(n.target)]
        for g in explained.graphs
        for n in g.graph.nodes
    ]


@pytest.mark.parametrize("name", CONSTANT_CLASSES)
def test_tensors_made_in_forward_trace_as_torch_on_the_cpu(constants, name):
    _check_levels(constants, CONSTANTS, name)
    build = constants.find_class(name).build
    # the aten export runs on fake CPU tensors: tensors made without `device=` mix in as on the CPU. A step that
    # still ran on meta and could not mix them in says which tensors ran instead, and why
    if build.tensors != "meta":
        assert "cannot mix with tensors the code makes on the CPU" in build.tensors_reason


def test_a_module_too_large_for_the_cpu_exports_on_fake_cpu_tensors_without_a_fallback(constants):
    cls = constants.find_class("TokenModel")
    # its `torch.arange` without `device=` is a CPU tensor: the export's fake CPU tensors mix with it
    assert cls.levels["aten"].ok and (cls.build.tensors, cls.build.tensors_reason) == ("meta", "")


@pytest.mark.parametrize("name", CUDA_CLASSES)
def test_a_default_device_the_machine_lacks_traces_as_on_the_cpu(default_cuda, name):
    _check_levels(default_cuda, DEFAULT_CUDA, name)
    assert default_cuda.find_class(name).build.device == "meta"  # no weights were made on any device


def _line(text: str) -> int:
    return next(i for i, line in enumerate(DEFAULT_CUDA.read_text().splitlines(), 1) if text in line)


def test_each_line_asking_for_a_device_gets_one_information(default_cuda):
    asked = [d for d in default_cuda.all_diagnostics() if d.category == "default-device"]
    assert [(d.line, d.severity) for d in asked] == [
        (_line('set_default_device("cuda")'), "information"),
        (_line('set_default_device("cuda:0")'), "information"),
    ]
    top, own = asked
    assert "`cuda`" in top.message and "`cuda:0`" in own.message
    if not torch.cuda.is_available():
        assert all("which this machine does not have" in d.message for d in asked)
    assert all("fxlens traced on the meta device and the CPU instead" in d.message for d in asked)
    assert "`device=cpu`" in top.explanation
    # nothing else went wrong: no error anywhere in the file
    assert [
        d for d in default_cuda.all_diagnostics() if d.severity == "error" and d.category != "factory-with-traced-size"
    ] == []

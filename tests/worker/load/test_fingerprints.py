"""A class whose trace cannot have changed is not traced again; every way it can change is noticed.

Each case traces a text, then an edited text with the first trace's fingerprints as `known`, and
checks which classes the worker traced again (a class it kept is listed in `unchanged`).
"""

from __future__ import annotations

import textwrap

import pytest
import pytest_asyncio
from fxlens.engine.worker_client import TraceOptions, WorkerClient

pytestmark = pytest.mark.asyncio(loop_scope="module")

TWO_LEVELS = textwrap.dedent("""
    import torch
    from torch import nn

    SCALE = 2.0


    def helper(x):
        return x * SCALE


    class Block(nn.Module):
        def __init__(self, width, scale=1.0, act=None):
            super().__init__()
            self.fc = nn.Linear(width, width)
            self.act = act or (lambda x: torch.relu(x) * scale)

        def forward(self, x):
            return helper(self.act(self.fc(x)))


    # fxlens: Net(16)(torch.randn(4, 8))
    class Net(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.stem = nn.Linear(8, width)
            self.block = Block(width)
            self.head = nn.Linear(width, 1)

        def forward(self, x):
            h = self.block(self.stem(x))
            return self.head(h).sum()


    UNUSED = 1

    if __name__ == "__main__":
        print(Net(16)(torch.randn(4, 8)))
""")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def client():
    worker = WorkerClient()
    await worker.start()
    yield worker
    await worker.stop()


async def retrace(client: WorkerClient, tmp_path, before: str, after: str) -> tuple[set[str], set[str]]:
    """(classes traced again, classes kept) when `before` is edited into `after`."""
    path = tmp_path / "model.py"
    first = await client.analyse(str(path), before, TraceOptions())
    known = {c.name: c.fingerprint for c in first.classes}
    assert all(known.values()), known
    second = await client.analyse(str(path), after, TraceOptions(), known=known)
    return {c.name for c in second.classes}, set(second.unchanged)


async def test_an_edit_to_the_parents_forward_keeps_the_childs_trace(client, tmp_path):
    # (the `__main__` block names Net, but never runs in a trace: Block does not depend on it)
    edited = TWO_LEVELS.replace("self.head(h).sum()", "self.head(h).sum() * 3")
    assert await retrace(client, tmp_path, TWO_LEVELS, edited) == ({"Net"}, {"Block"})


async def test_a_global_no_class_uses_retraces_nothing(client, tmp_path):
    edited = TWO_LEVELS.replace("UNUSED = 1", "UNUSED = 2")
    assert await retrace(client, tmp_path, TWO_LEVELS, edited) == (set(), {"Net", "Block"})


async def test_the_same_text_traces_nothing(client, tmp_path):
    assert await retrace(client, tmp_path, TWO_LEVELS, TWO_LEVELS) == (set(), {"Net", "Block"})


async def test_the_kept_report_is_the_one_the_first_trace_made(client, tmp_path):
    path = tmp_path / "model.py"
    first = await client.analyse(str(path), TWO_LEVELS, TraceOptions())
    # without `known` (a worker that cannot trust the caller's copy) everything is traced again
    again = await client.analyse(str(path), TWO_LEVELS, TraceOptions())
    assert {c.name for c in again.classes} == {"Net", "Block"} and again.unchanged == []
    assert [c.fingerprint for c in first.classes] == [c.fingerprint for c in again.classes]


@pytest.mark.parametrize(
    "edit, why",
    [
        (("h = self.block(self.stem(x))", "h = self.block(self.stem(x).unsqueeze(0))"), "its inputs change shape"),
        (("self.block = Block(width)", "self.block = Block(width, act=torch.tanh)"), "its attributes change"),
        (
            ("self.block = Block(width)", "self.block = Block(width, scale=3.0)"),
            "what a lambda it holds closed over changes",
        ),
        (("return helper(self.act(self.fc(x)))", "return helper(self.act(self.fc(x) + 1))"), "its own code changes"),
        (("SCALE = 2.0", "SCALE = 3.0"), "a global that a function it calls reads changes"),
        (("import torch\n", "import torch\nimport math\n"), "the imports change"),
    ],
)
async def test_the_child_is_traced_again_when(client, tmp_path, edit, why):
    traced, _kept = await retrace(client, tmp_path, TWO_LEVELS, TWO_LEVELS.replace(*edit))
    assert "Block" in traced, why


async def test_an_edit_to_a_submodules_class_retraces_its_holder_even_when_its_code_never_names_it(client, tmp_path):
    source = TWO_LEVELS.replace("self.block = Block(width)", "self.block = make_block(width)") + textwrap.dedent("""

        def make_block(width):
            return Block(width)
    """)
    traced, kept = await retrace(client, tmp_path, source, source.replace("torch.relu(x)", "torch.sigmoid(x)"))
    assert traced == {"Net", "Block"} and not kept


async def test_a_config_default_that_reaches_a_plain_attribute_is_seen(client, tmp_path):
    source = textwrap.dedent("""
        from dataclasses import dataclass
        import torch
        from torch import nn

        @dataclass
        class Config:
            width: int = 16
            heads: int = 2

        class Attention(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.heads = config.heads
                self.qkv = nn.Linear(config.width, 3 * config.width)

            def forward(self, x):
                q, k, v = self.qkv(x).chunk(3, dim=-1)
                return q.view(*x.shape[:-1], self.heads, -1).sum(-1)

        class Model(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.attn = Attention(config)

            def forward(self, x):
                return self.attn(x)
    """)
    traced, kept = await retrace(client, tmp_path, source, source.replace("heads: int = 2", "heads: int = 4"))
    assert traced == {"Model", "Attention"} and not kept


async def test_a_saved_edit_to_an_imported_file_retraces_the_classes_that_use_it(client, tmp_path):
    helpers = tmp_path / "helpers.py"
    helpers.write_text("def double(x):\n    return x * 2\n")
    source = textwrap.dedent("""
        import torch
        from torch import nn
        from helpers import double

        # fxlens: Uses()(torch.randn(2, 4))
        class Uses(nn.Module):
            def forward(self, x):
                return double(x)

        # fxlens: Ignores()(torch.randn(2, 4))
        class Ignores(nn.Module):
            def forward(self, x):
                return x + 1
    """)
    path = tmp_path / "model.py"
    first = await client.analyse(str(path), source, TraceOptions())
    known = {c.name: c.fingerprint for c in first.classes}
    helpers.write_text("def double(x):\n    return x * 3\n")
    second = await client.analyse(str(path), source, TraceOptions(), known=known)
    assert [c.name for c in second.classes] == ["Uses"] and second.unchanged == ["Ignores"]
    mul = next(n for n in second.classes[0].levels["fx"].nodes if n.op == "call_function")
    assert mul.text.endswith("args = (%x, 3), kwargs = {})"), mul.text


REGISTRY = textwrap.dedent("""
    import torch
    from torch import nn

    SCALES = {}
    CALLS = []


    class Child(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)

        def forward(self, x):
            CALLS.append(x.shape)
            return self.fc(x) * SCALES["child"]


    # fxlens: Parent(2.0)(torch.randn(4, 8))
    class Parent(nn.Module):
        def __init__(self, scale):
            super().__init__()
            SCALES["child"] = scale
            self.child = Child()

        def forward(self, x):
            return self.child(x).sum()
""")


async def test_a_global_a_parent_fills_at_build_and_the_child_reads_retraces_the_child(client, tmp_path):
    traced, _kept = await retrace(client, tmp_path, REGISTRY, REGISTRY.replace("Parent(2.0)", "Parent(3.0)"))
    assert traced == {"Parent", "Child"}


async def test_a_global_each_forward_appends_to_retraces_nothing_when_nothing_changed(client, tmp_path):
    assert await retrace(client, tmp_path, REGISTRY, REGISTRY) == (set(), {"Parent", "Child"})

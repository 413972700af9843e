"""How fxlens builds a module and finds its inputs when no directive says so."""
from __future__ import annotations

import asyncio
import textwrap

import pytest

from fxlens.engine.worker_client import TraceOptions, WorkerClient

SOURCES = {
    "call_in_file": """
        import torch
        from torch import nn

        class Widen(nn.Module):
            def __init__(self, width, depth):
                super().__init__()
                self.layers = nn.Sequential(*[nn.Linear(width, width) for _ in range(depth)])

            def forward(self, x):
                return self.layers(x)

        if __name__ == "__main__":
            model = Widen(24, depth=3)
    """,
    "embedding_first": """
        import torch
        from torch import nn

        class Tagger(nn.Module):
            def __init__(self):
                super().__init__()
                self.embed = nn.Embedding(100, 12)
                self.norm = nn.LayerNorm(12)
                self.out = nn.Linear(12, 5)

            def forward(self, tokens):
                return self.out(self.norm(self.embed(tokens)))
    """,
    "linear_rank3": """
        import torch
        from torch import nn

        class Pool(nn.Module):
            def __init__(self):
                super().__init__()
                self.score = nn.Linear(16, 1)

            def forward(self, x):
                batch, length, width = x.shape
                weights = self.score(x).softmax(dim=1)
                return (weights * x).sum(dim=1)
    """,
    "meta_fails": """
        import torch
        from torch import nn

        class NeedsValues(nn.Module):
            def __init__(self):
                super().__init__()
                self.n = int(torch.ones(3).sum().item())
                self.fc = nn.Linear(self.n, 2)

            def forward(self, x):
                return self.fc(x)
    """,
    "unbuildable": """
        import torch
        from torch import nn

        class Mystery(nn.Module):
            def __init__(self, thing):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                return self.fc(x)
    """,
    "int_item": """
        import torch
        from torch import nn

        # fxlens: IntItem()(torch.randn(4, 8))
        class IntItem(nn.Module):
            def forward(self, x):
                k = (x > 0).sum().item()
                return x * k
    """,
    "no_inputs": """
        import torch
        from torch import nn

        class Opaque(nn.Module):
            def forward(self, x):
                return x.flip(0) * 2
    """,
}


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("building")

    async def analyse_all():
        client = WorkerClient()
        await client.start()
        try:
            result = {}
            for name, text in SOURCES.items():
                path = folder / f"{name}.py"
                path.write_text(textwrap.dedent(text))
                result[name] = await client.analyse(str(path), path.read_text(), TraceOptions())
            return result
        finally:
            await client.stop()

    return asyncio.run(analyse_all())


def test_arguments_of_a_call_in_the_main_block_build_the_module(reports):
    widen = reports["call_in_file"].find_class("Widen")
    assert widen.build.how == "call-in-file" and "Widen(24, depth=3)" in widen.build.detail
    assert [i.shape for i in widen.build.inputs] == [["B", 24]]
    assert widen.levels["aten"].ok
    assert sum(n.target == "aten.linear.default" for n in widen.levels["aten"].nodes) == 3


def test_embedding_first_gets_long_indices_with_batch_and_sequence(reports):
    tagger = reports["embedding_first"].find_class("Tagger")
    assert [(i.shape, i.dtype) for i in tagger.build.inputs] == [(["B", "T"], "int64")]
    out = next(n for n in tagger.levels["fx"].nodes if n.target == "out")
    assert out.shape == ["B", "T", 5]


def test_rank_is_raised_until_forward_accepts_the_inputs(reports):
    pool = reports["linear_rank3"].find_class("Pool")
    assert pool.build.inputs[0].shape == ["B", "T", 16]
    assert pool.levels["fx"].nodes[-1].shape == ["B", 16]


def test_construction_that_fails_on_meta_falls_back_to_cpu_and_says_so(reports):
    needs = reports["meta_fails"].find_class("NeedsValues")
    assert needs.build.device == "cpu" and "built on CPU" in needs.build.detail
    assert needs.levels["fx"].ok and needs.levels["aten"].ok


def test_unbuildable_class_gets_a_directive_hint_at_the_class_line(reports):
    mystery = reports["unbuildable"].find_class("Mystery")
    assert not mystery.levels["fx"].ok
    (diagnostic,) = mystery.levels["fx"].diagnostics
    assert diagnostic.category == "construction" and diagnostic.line == 5
    assert "needs thing" in diagnostic.message and "# fxlens: Mystery(" in diagnostic.fix


def test_without_inputs_the_fx_level_still_runs_and_asks_for_a_directive(reports):
    opaque = reports["no_inputs"].find_class("Opaque")
    assert opaque.levels["fx"].ok
    assert [n.target for n in opaque.levels["fx"].nodes if n.op == "call_method"] == ["flip"]
    assert not opaque.levels["aten"].ok
    (hint,) = opaque.levels["fx"].diagnostics
    assert hint.category == "inputs" and "# fxlens: Opaque(" in hint.fix


def test_a_size_known_only_at_run_time_is_shown_not_fatal(reports):
    aten = reports["int_item"].find_class("IntItem").levels["aten"]
    assert aten.ok
    item = next(n for n in aten.nodes if n.target == "aten.item.default")
    assert item.value == "SymInt u0"

"""How fxlens builds a module and finds its inputs when no directive says so."""

from __future__ import annotations

import asyncio
import textwrap

import pytest
import torch
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
    assert (
        "needs `thing`, and nothing in the file or its package passes it" in diagnostic.message
        and "# fxlens: Mystery(" in diagnostic.fix
    )


def test_a_forward_no_layer_consumes_gets_a_small_float_tensor_labelled(reports):
    # (issue #22: such a forward had no inputs, and so no aten graph)
    opaque = reports["no_inputs"].find_class("Opaque")
    assert opaque.levels["fx"].ok
    assert [n.target for n in opaque.levels["fx"].nodes if n.op == "call_method"] == ["flip"]
    [spec] = opaque.build.inputs
    assert spec.shape == ["B", 16] and spec.source == "no layer consumes it: a small float tensor"
    namespace: dict = {}
    exec(textwrap.dedent(SOURCES["no_inputs"]), namespace)
    program = torch.export.export(namespace["Opaque"](), (torch.randn(2, 16),), strict=False)
    assert opaque.levels["aten"].ok and [n.target for n in opaque.levels["aten"].nodes if n.op == "call_function"] == [
        str(n.target) for n in program.graph.nodes if n.op == "call_function"
    ]


def test_a_size_known_only_at_run_time_is_shown_not_fatal(reports):
    aten = reports["int_item"].find_class("IntItem").levels["aten"]
    assert aten.ok
    item = next(n for n in aten.nodes if n.target == "aten.item.default")
    assert item.value == "SymInt u0"


# -- keywords, directives, children of a parent that cannot run: fixtures in the style of real code --

from torch_reference import FIXTURES, analyse, expected, reported  # noqa: E402

BUILDING = ["keywords", "directives", "children"]
# (file, class, levels both fxlens and torch trace)
AGREES = [
    ("keywords", "Scaled", ("fx", "aten")),
    ("keywords", "Masked", ("fx", "aten")),
    ("keywords", "TinyLayer", ("fx", "aten")),
    ("keywords", "TinyModel", ("fx", "aten")),
    ("keywords", "TinyForCausalLM", ("fx", "aten")),
    ("directives", "Above", ("fx", "aten")),
    ("directives", "Between", ("fx", "aten")),
    ("children", "Layer", ("fx", "aten")),
    ("children", "Head", ("fx",)),
    ("children", "ResBlock", ("fx", "aten")),
    ("children", "Denoiser", ("fx",)),
]


@pytest.fixture(scope="module")
def real(request):
    return analyse([FIXTURES / f"{name}.py" for name in BUILDING])


@pytest.mark.parametrize("file_key,class_name,levels", AGREES)
def test_every_traced_class_matches_raw_torch_on_the_reported_directive(real, file_key, class_name, levels):
    report = real[file_key]
    cls = report.find_class(class_name)
    for level in levels:
        assert cls.levels[level].ok, (level, cls.levels[level].diagnostics)
        assert reported(cls, level) == expected(FIXTURES / f"{file_key}.py", report, cls, level), level


def test_keyword_inputs_reach_forward_as_keywords(real):
    causal = real["keywords"].find_class("TinyForCausalLM")
    assert [(i.name, i.keyword) for i in causal.build.inputs] == [
        ("input_ids", False),
        ("attention_mask", True),
        ("use_cache", True),
    ]
    assert causal.build.inputs[2].value == "False"
    masked = real["keywords"].find_class("Masked")  # a keyword-only parameter
    assert [(i.name, i.shape, i.dtype, i.keyword) for i in masked.build.inputs][1] == ("mask", [2, 5], "bool", True)
    placeholders = [n.name for n in real["keywords"].find_class("Scaled").levels["aten"].nodes if n.op == "placeholder"]
    assert placeholders[-2:] == ["x", "scale"]


def test_a_child_called_with_keywords_keeps_them(real):
    layer = real["keywords"].find_class("TinyLayer")
    assert layer.built_by == "TinyForCausalLM"
    assert [(i.name, i.shape, i.keyword) for i in layer.build.inputs] == [
        ("hidden_states", [2, 6, 32], False),
        ("attention_mask", [2, 6], True),
    ]
    assert any(n.target == "aten.mul.Tensor" for n in layer.levels["aten"].nodes)  # the mask was applied


def test_directives_above_and_between_decorators(real):
    report = real["directives"]
    assert report.find_class("Above").build.how == "directive"
    assert report.find_class("Above").directive_line == 21
    between = report.find_class("Between")
    assert between.build.how == "directive" and between.directive_line == 34
    assert [i.shape for i in between.build.inputs] == [[5, 4]]


@pytest.mark.parametrize(
    "class_name,line,category,words",
    [
        (
            "WrongClass",
            44,
            "construction",
            "the directive above `class WrongClass` builds a `Above`: it must build the class it sits above",
        ),
        ("Typo", 66, "inputs", "NameError: name 'widht' is not defined"),
        ("TooMany", 76, "inputs", "too many positional arguments"),
    ],
)
def test_a_failing_directive_is_an_error_at_its_line(real, class_name, line, category, words):
    cls = real["directives"].find_class(class_name)
    assert not cls.levels["fx"].ok and not cls.levels["fx"].nodes
    (diagnostic,) = cls.levels["fx"].diagnostics
    assert (diagnostic.line, diagnostic.severity, diagnostic.category) == (line, "error", category)
    assert words in diagnostic.message and diagnostic.fix


def test_a_directive_failing_inside_init_is_shown_at_both_lines(real):
    error, note = real["directives"].find_class("Heads").levels["fx"].diagnostics
    # the error where the traceback puts it, the directive's line told it failed there
    assert (error.line, error.severity, error.category) == (59, "error", "construction")
    # the arguments the failing line reads are the ones named: the directive's to change
    assert error.message == (
        "ValueError: dim 10 is not divisible by heads 3 (from the `# fxlens:` directive at line 54, its `dim=10` and "
        "`heads=3`)"
    )
    assert (note.line, note.severity) == (54, "information")
    assert "this directive failed while building the module from its `dim=10` and `heads=3`" in note.message
    assert "(raised at line 59)" in note.message
    assert (
        error.fix
        == note.fix
        == "Change the directive's `dim=10` and `heads=3`: line 59 of `Heads.__init__` rejects them."
    )


def test_children_called_before_the_parent_failed_keep_their_inputs(real):
    layer = real["children"].find_class("Layer")
    assert layer.built_by == "Stack" and [i.shape for i in layer.build.inputs] == [[2, 16]]
    assert layer.levels["aten"].ok


@pytest.mark.parametrize(
    "class_name,parent,why",
    [
        ("Head", "Stack", "running Stack on its inputs failed: RuntimeError: shape '[2, 5, -1]' is invalid"),
    ],
)
def test_children_of_a_failed_parent_run_are_traced_and_say_why_they_have_no_inputs(real, class_name, parent, why):
    cls = real["children"].find_class(class_name)
    assert cls.built_by == parent and cls.build.how == "parent"
    assert cls.levels["fx"].ok and any(n.op == "call_module" for n in cls.levels["fx"].nodes)
    (hint,) = [d for d in cls.levels["fx"].diagnostics if d.category == "inputs"]
    assert why in hint.message and "needs" not in hint.message


def test_a_child_the_file_builds_alone_beats_its_failed_parents_instance_once_its_inputs_are_known(real):
    # ResBlock(8, 4) is called in the file; its GroupNorm says what it takes: the Denoiser's run, which fails
    # before reaching its blocks, has nothing better to offer
    cls = real["children"].find_class("ResBlock")
    assert cls.build.how == "call-in-file" and cls.built_by is None
    assert [(i.shape, i.source) for i in cls.build.inputs] == [(["B", 8, 16, 16], "first used by GroupNorm")]
    assert cls.levels["aten"].ok


def test_one_class_asked_for_builds_only_it_and_the_classes_that_build_it(tmp_path):
    marks = tmp_path / "built.txt"
    path = tmp_path / "trunk.py"
    path.write_text(
        textwrap.dedent(f"""
        import torch
        from torch import nn

        def built(name):
            with open({str(marks)!r}, "a") as log:
                log.write(name + "\\n")

        class Leaf(nn.Module):
            def __init__(self):
                super().__init__()
                built("Leaf")
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                return self.fc(x)

        def make_leaf():
            return Leaf()

        class Trunk(nn.Module):
            def __init__(self):
                super().__init__()
                built("Trunk")
                self.leaf = make_leaf()

            def forward(self, x):
                return self.leaf(x) * 2

        class Unrelated(nn.Module):
            def __init__(self):
                super().__init__()
                built("Unrelated")
                self.fc = nn.Linear(8, 8)

            def forward(self, x):
                return self.fc(x)
    """)
    )
    report = analyse([path], classes=["Leaf"])["trunk"]
    assert [c.name for c in report.classes] == ["Leaf"] and report.module_classes == ["Leaf", "Trunk", "Unrelated"]
    leaf = report.classes[0]
    assert leaf.built_by == "Trunk" and [i.shape for i in leaf.build.inputs] == [["B", 4]]
    assert set(marks.read_text().split()) == {"Leaf", "Trunk"}  # Trunk builds a Leaf through make_leaf()


MODELS = FIXTURES.parents[0] / "models"


@pytest.fixture(scope="module")
def built_alone():
    return analyse([MODELS / "tiny_gpt.py", MODELS / "convnet.py"])


@pytest.mark.parametrize(
    "file_key,class_name,how,directive",
    [
        ("tiny_gpt", "GPT", "config", "GPT(config=GPTConfig())(torch.zeros(2, 8, dtype=torch.int64))"),
        ("convnet", "ConvNet", "no-arguments", "ConvNet()(torch.randn(2, 3, 16, 16))"),
    ],
)
def test_every_build_but_a_childs_carries_the_directive_that_rebuilds_it(
    built_alone, file_key, class_name, how, directive
):
    report = built_alone[file_key]
    cls = report.find_class(class_name)
    assert (cls.build.how, cls.build.directive) == (how, directive)
    for level in ("fx", "aten"):
        assert reported(cls, level) == expected(MODELS / f"{file_key}.py", report, cls, level), level


def test_the_directive_of_a_call_in_the_file_keeps_its_arguments(reports):
    assert reports["call_in_file"].find_class("Widen").build.directive == "Widen(24, depth=3)(torch.randn(2, 24))"

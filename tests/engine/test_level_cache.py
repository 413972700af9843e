"""The cache of levels computed on demand: per file and class fingerprint, positions carried through edits."""

from fxlens.engine.level_cache import LevelCache
from fxlens.report import ClassReport, LevelResult, Node

TEXT = "import torch\n\n\nclass Net:\n    def forward(self, x):\n        return x.relu()\n"


def _net(fingerprint, line=4, levels=("fx", "aten")):
    return ClassReport(
        "Net", line, line + 2, fingerprint=fingerprint, levels={level: LevelResult(level, True) for level in levels}
    )


def _core(line=6):
    return {
        "core-aten": LevelResult(
            "core-aten",
            True,
            [Node("relu", "call_function", "aten.relu.default", 1, line=line, col=15, end_line=line, end_col=23)],
        )
    }


def test_a_class_with_the_same_fingerprint_gets_the_level_with_its_lines_moved():
    cache = LevelCache()
    cache.put("/m.py", _net("f1"), TEXT, _core())
    moved_text = "# a comment above\n" + TEXT
    got = cache.attach("/m.py", _net("f1", line=5), moved_text)
    assert list(got.levels) == ["fx", "aten", "core-aten"]  # the ladder's order
    assert got.levels["core-aten"].nodes[0].line == 7


def test_another_fingerprint_file_or_a_level_already_there_gets_nothing():
    cache = LevelCache()
    cache.put("/m.py", _net("f1"), TEXT, _core())
    changed = _net("f2")
    assert cache.attach("/m.py", changed, TEXT) is changed
    elsewhere = _net("f1")
    assert cache.attach("/other.py", elsewhere, TEXT) is elsewhere
    traced = _net("f1", levels=("fx", "aten", "core-aten"))
    assert cache.attach("/m.py", traced, TEXT) is traced


def test_without_a_fingerprint_only_the_same_text_matches():
    cache = LevelCache()
    cache.put("/m.py", _net(None), TEXT, _core())
    assert "core-aten" in cache.attach("/m.py", _net(None), TEXT).levels
    assert "core-aten" not in cache.attach("/m.py", _net(None), TEXT + "\nx = 1\n").levels


def test_the_least_recently_used_classes_go_first():
    cache = LevelCache(size=2)
    for fingerprint in ("a", "b"):
        cache.put("/m.py", _net(fingerprint), TEXT, _core())
    cache.attach("/m.py", _net("a"), TEXT)  # used: "b" is now the oldest
    cache.put("/m.py", _net("c"), TEXT, _core())
    assert "core-aten" in cache.attach("/m.py", _net("a"), TEXT).levels
    assert "core-aten" not in cache.attach("/m.py", _net("b"), TEXT).levels

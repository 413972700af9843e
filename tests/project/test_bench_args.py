"""The benchmark's command line parses (the benchmarks themselves never run in tests: no timings here)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

RUN = Path(__file__).resolve().parents[2] / "bench" / "run.py"


def _bench_run():
    spec = importlib.util.spec_from_file_location("fxlens_bench_run", RUN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_defaults_select_every_scenario():
    args = _bench_run().parse_args([])
    assert args.only == ["hover", "edit", "cold", "scale", "load", "tree", "big"]
    assert args.hovers >= 1000 and args.scale_models == ("gpt2-12", "gpt2-48", "llama70b")


def test_a_subset_and_its_options():
    args = _bench_run().parse_args(["--only", "hover, load", "--hovers", "50", "--scale-models", "gpt2-12"])
    assert args.only == ["hover", "load"] and args.hovers == 50 and args.scale_models == ("gpt2-12",)


def test_an_unknown_scenario_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        _bench_run().parse_args(["--only", "hover,typo"])
    assert exit_info.value.code == 2
    assert "typo" in capsys.readouterr().err


def test_writing_the_table_keeps_the_sections_other_benchmarks_wrote():
    old = "# Benchmarks\n\n## Hover\nold rows\n\n## Graph view at scale\nview rows\n\n## Targets\nold\n"
    table = "# Benchmarks\n\n## Hover\nnew rows\n\n## Targets\nnew\n"
    written = _bench_run().keep_other_sections(table, old)
    assert written == "# Benchmarks\n\n## Hover\nnew rows\n\n## Targets\nnew\n\n## Graph view at scale\nview rows\n"

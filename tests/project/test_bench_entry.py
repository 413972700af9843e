"""bench/'s one entry point (`python -m bench NAME`) and its one results file (bench/RESULTS.md): the table of
names names every benchmark script, and a benchmark rewriting its section keeps everyone else's."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
# scripts with a `__main__` block that are not benchmarks: processes a benchmark starts by their path
STARTED_BY_PATH = {
    "fixes_baseline.py",
    "fixes_check.py",
    "raw_torch.py",
    "reach_torch.py",
    "reach_packages_torch.py",
    "reach_research_torch.py",
    "scale.py",
}


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"fxlens_bench_{name}", BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (a dataclass looks its module up there)
    spec.loader.exec_module(module)
    return module


def test_every_script_with_a_main_block_is_a_named_benchmark_or_started_by_path():
    table = _load("__main__").BENCHMARKS
    scripts = {benchmark.script for benchmark in table.values()}
    assert all((BENCH / script).is_file() for script in scripts)
    runnable = {
        path.name
        for path in BENCH.glob("*.py")
        if path.name != "__main__.py" and '__name__ == "__main__"' in path.read_text()
    }
    assert runnable - STARTED_BY_PATH == {script for script in scripts if script.endswith(".py")}
    assert (BENCH / "graph_view.mjs").name in scripts


def test_python_m_bench_lists_the_names_and_refuses_an_unknown_one():
    listed = subprocess.run([sys.executable, "-m", "bench"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0
    names = [line.split()[0] for line in listed.stdout.splitlines() if line.startswith("  ")]
    assert names == list(_load("__main__").BENCHMARKS) and "suite" in names and "reach-packages" in names
    unknown = subprocess.run(
        [sys.executable, "-m", "bench", "typo"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert unknown.returncode == 2 and "no benchmark 'typo'" in unknown.stderr


def test_a_section_is_replaced_where_it_is_or_added_at_the_end():
    with_section = _load("results_file").with_section
    old = "# Benchmarks\n\nintro\n\n## Hover\nrows\n\n## Reach\nold reach\n### Per class\nold\n\n## Before\nthen\n"
    replaced = with_section("## Reach\nnew reach\n", old)
    assert replaced == "# Benchmarks\n\nintro\n\n## Hover\nrows\n\n## Reach\nnew reach\n\n## Before\nthen\n"
    assert with_section("## Scale\nrows\n", old) == old + "\n## Scale\nrows\n"


def test_the_one_results_file_holds_the_reach_and_the_before_sections():
    sections = _load("results_file").sections((BENCH / "RESULTS.md").read_text())
    assert {
        "## Targets",
        "## Reach on installed packages (issue 22)",
        "## Before the latency fixes (commit a04acd1)",
    } <= set(sections)
    assert not (BENCH / "REACH.md").exists() and not (BENCH / "RESULTS-before-fixes.md").exists()

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "server"))
# what tests in several folders share (raw torch's references, the hostile-code harness, fxlens as a command)
# imports by its module name from anywhere under tests/
sys.path.insert(0, str(ROOT / "tests" / "support"))

# `fxlens check` caches its reports; a test run keeps its own cache, never the user's
os.environ["FXLENS_CACHE_DIR"] = tempfile.mkdtemp(prefix="fxlens-test-cache-")
# the inductor level's private folder (worker/levels/inductor_cache.py), never the user's: kept between runs,
# so inductor's CPU probes (a few g++ runs) are compiled once per machine, not once per test run
os.environ.setdefault(
    "FXLENS_INDUCTOR_CACHE_DIR", os.path.join(tempfile.gettempdir(), f"fxlens-test-inductor-{os.getuid()}")
)

# Each test drives processes of its own (a worker and its trace children, a server, an editor), which use about
# one core between them: the suite runs a file per core, up to MAX_WORKERS (each worker's processes hold a few
# hundred MB). One file more than the cores, to fill the time tests wait on hangs and editors, was measured slower
# on 2 cores, and a code-server hover then failed (bench/RESULTS.md, "CI time").
MAX_WORKERS = 4

# xdist hands out files in collection order (pyproject.toml turns off its own reordering by number of tests, which
# handed these out last): these, which take minutes each on 2 cores (measured with --durations=0: the real
# repositories and the installed packages traced whole in module fixtures, the README's fresh venv, VS Code and
# Chromium, the hang and kill cases, inductor's compiles), go first, so that the many short files fill in around
# them rather than after them. By file name: the folder a test file sits in may change.
LONGEST_FIRST = (
    "test_real_repos.py",
    "test_research_corpus.py",
    "test_packages.py",
    "test_readme_setup.py",
    "test_reach_packages.py",
    "test_vscode.py",
    "test_hostile_server.py",
    "test_inductor.py",
    "test_reach_rules.py",
    "test_reach_found_builds.py",
)


def pytest_xdist_auto_num_workers(config) -> int:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(cores, MAX_WORKERS))


def pytest_collection_modifyitems(config, items) -> None:
    def rank(item) -> int:
        name = item.path.name
        return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)  # (stable: the order within a file, and of the other files, stays)

"""The corpus of real-repository model files (tests/fixtures/repos, no directive anywhere), through the
CLI as a user runs it from the repository root: every file loads, every class fxlens traces has raw
torch's nodes (rebuilt from what the report says it built), every failure is categorised.

One `fxlens graph --json` per file and one raw-torch process per repository (bench/reach.py), shared by
the module. bench/reach.py measures the rest of issue 11's "Done means" (the reach ratios).
"""
from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import reach  # noqa: E402
from reference import CORPUS  # noqa: E402  (put on sys.path by reach)

FILES = {model.key: model for model in CORPUS}



@pytest.fixture(scope="module")
def runs() -> dict:
    return {key: reach.fxlens_graph(model) for key, model in FILES.items()}


@pytest.fixture(scope="module")
def rebuilt(runs) -> dict:
    """(file, class) -> raw torch's rows per level, for every class and level fxlens traced."""
    jobs = defaultdict(list)
    for key, model in FILES.items():
        classes = reach.by_class(runs[key])
        for name, levels in classes.items():
            wanted = [level for level, obj in levels.items() if reach.shown(obj)]
            jobs[model.repo].append({"file": key, "class": name, "levels": wanted,
                                     "recipe": reach.recipe(name, levels, classes) if wanted else None})
    out = {}
    for repo, repo_jobs in jobs.items():
        comparable = [job for job in repo_jobs if job["recipe"]]
        if comparable:
            answer = reach.raw_torch(sorted({job["file"] for job in comparable}), comparable, truth=False)
            assert not answer["import_errors"], answer["import_errors"]
            out.update({(r["file"], r["class"]): r for r in answer["rebuilds"]})
        out.update({(job["file"], job["class"]): None for job in repo_jobs if job["levels"] and not job["recipe"]})
    return out


@pytest.mark.parametrize("key", list(FILES))
def test_file_loads(runs, key):
    run = runs[key]
    assert not run["load"], run["load"]
    assert {obj["class"] for obj in run["objects"]} >= set(FILES[key].classes), run["stderr"]


@pytest.mark.parametrize("key", list(FILES))
def test_every_traced_level_agrees_with_raw_torch(runs, rebuilt, key):
    for name, levels in reach.by_class(runs[key]).items():
        for level, obj in levels.items():
            if not reach.shown(obj):
                continue
            theirs = rebuilt[(key, name)]
            assert theirs is not None, f"{name}: the report does not say how it was built ({obj['inputs']})"
            assert "rows" in theirs[level], f"{name} ({level}): raw torch could not rebuild it: {theirs[level]}"
            agree, why, _ = reach.agreement(obj, theirs[level])
            assert agree, f"{name} ({level}): {why}"


@pytest.mark.parametrize("key", list(FILES))
def test_every_failure_has_its_own_category(runs, key):
    catch_all = [(obj["class"], obj["level"], d["line"], d["message"]) for obj in runs[key]["objects"]
                 for d in obj["diagnostics"] if d["severity"] == "error" and d["category"] in ("trace", "")]
    assert not catch_all


@pytest.mark.parametrize("key", list(FILES))
def test_a_guessed_build_carries_its_directive(runs, key):
    guessed = [obj for obj in runs[key]["objects"] if obj["inputs"]["built"] == "guessed"]
    assert all(obj["inputs"].get("directive") for obj in guessed), [o["class"] for o in guessed]

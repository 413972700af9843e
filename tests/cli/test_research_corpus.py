"""fxlens on research-style code it has never seen: tests/fixtures/research, eight small repositories of our own
laid out as research code is published (argparse training scripts whose `args` build the models, YAML configs,
CIFAR-size networks, detection and segmentation heads with several inputs, a GroupNorm U-Net, a decoder that
needs `setup_caches`, VAEs, attention pools with positional tables; no directive anywhere). Each file through
`fxlens graph --json` from its repository's root, as a user runs it.

What stands: every level fxlens shows has exactly raw torch's nodes (rebuilt in a separate interpreter from what
the report says it built), no file ends in `[internal]`. Reach: a class that raw torch fx-traces (exports) with the
hand-written construction of bench/research_reference.py shows an fx (aten) graph. The classes fxlens does not
reach yet are non-strict xfails naming the point of issue 41 they wait for (`python -m bench reach-research`
measures the same, with times and memory).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import reach_common  # noqa: E402  (fxlens_json_repositories, by_class, shown, recipe, agreement)
from research_reference import CORPUS  # noqa: E402

FILES = {model.key: model for model in CORPUS}
RAW_TORCH = ROOT / "bench" / "reach_research_torch.py"

STRUCTURED = "#41 item 2: structured inputs"

# (file, class, levels) -> why fxlens does not show those levels yet: measured on main before issue 41's mechanisms
# landed (bench/RESULTS.md, the research section's baseline); a row goes once its class reaches
NOT_YET_BY_CLASS = [
    ("promptseg/promptseg/nets/heads.py", "MaskHead", "aten", f"{STRUCTURED}: four inputs that must agree"),
]
NOT_YET = {(key, name, level): why for key, name, levels, why in NOT_YET_BY_CLASS for level in levels.split()}


# each level fxlens shows, and what raw torch does for it: `fx` where symbolic_trace traces, `aten` where export exports
RAW = {"fx": "fx", "aten": "export"}


def _reach_params() -> list:
    params = []
    for level in RAW:
        for key, model in FILES.items():
            for name in model.classes:
                why = NOT_YET.get((key, name, level))
                marks = [pytest.mark.xfail(strict=False, reason=why)] if why else []
                params.append(pytest.param(key, name, level, marks=marks, id=f"{level}:{key}::{name}"))
    return params


@pytest.fixture(scope="module")
def runs() -> dict:
    """file -> its part of its repository's one `fxlens graph --json` run (one worker start a repository, its
    files traced two at a time: the machine's cores)."""
    return reach_common.fxlens_json_repositories(list(CORPUS), timeout=600)


@pytest.fixture(scope="module")
def torch_side(runs) -> dict:
    """file -> raw torch's truth on the reference constructions and its rebuilds of what fxlens showed (one
    process: torch imported once, a child per repository)."""
    files = {}
    for key in FILES:
        classes = reach_common.by_class(runs[key])
        jobs = []
        for name, levels in classes.items():
            wanted = [level for level, obj in levels.items() if reach_common.shown(obj)]
            how = reach_common.recipe(name, levels, classes) if wanted else None
            if how:
                jobs.append({"class": name, "levels": wanted, "recipe": how})
        files[key] = jobs
    done = subprocess.run(
        [sys.executable, str(RAW_TORCH)],
        input=json.dumps({"mode": "files", "files": files}),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    answers = json.loads(done.stdout)
    for key, answer in answers.items():
        assert "error" not in answer, f"raw torch on {key}:\n{answer['error']}"
    return answers


@pytest.mark.parametrize("key", list(FILES))
def test_every_file_loads_and_lists_its_classes(runs, key):
    run = runs[key]
    problems = [line for line in run["load"] if ": information:" not in line]
    assert not problems, problems
    assert {obj["class"] for obj in run["objects"]} >= set(FILES[key].classes), run["stderr"]


@pytest.mark.parametrize("key", list(FILES))
def test_no_file_ends_in_an_internal_error(runs, key):
    run = runs[key]
    internal = [
        (obj["class"], obj["level"], d["message"][:300])
        for obj in run["objects"]
        for d in obj["diagnostics"]
        if d["category"] == "internal"
    ]
    assert not internal and "[internal]" not in run["stderr"], internal or run["stderr"]


@pytest.mark.parametrize("key", list(FILES))
def test_every_level_shown_has_raw_torchs_nodes(runs, torch_side, key):
    rebuilt = torch_side[key]["rebuilds"]
    for name, levels in reach_common.by_class(runs[key]).items():
        for level, obj in levels.items():
            if not reach_common.shown(obj):
                continue
            theirs = rebuilt.get(name)
            assert theirs is not None, f"{name}: the report does not say how it was built ({obj['inputs']})"
            assert "rows" in theirs[level], f"{name} ({level}): raw torch could not rebuild it: {theirs[level]}"
            agree, why, _ = reach_common.agreement(obj, theirs[level])
            assert agree, f"{name} ({level}): {why}"


@pytest.mark.parametrize(("key", "name", "level"), _reach_params())
def test_a_graph_where_raw_torch_has_one(runs, torch_side, key, name, level):
    """An fx graph where raw torch fx-traces the class, an aten graph where it exports it."""
    raw = RAW[level]
    truth = torch_side[key]["truth"][name]
    assert "reference_error" not in truth, truth
    if not truth[f"{raw}_ok"]:
        pytest.skip(f"raw torch does not {raw} {name} either: {truth[f'{raw}_error']}")
    obj = reach_common.by_class(runs[key]).get(name, {}).get(level)
    assert obj is not None, f"no {level} report for {name}"
    errors = [f"{d['category']}: {d['message'][:300]}" for d in obj["diagnostics"] if d["severity"] == "error"]
    assert reach_common.shown(obj), errors or obj["diagnostics"]

"""`fxlens check --show-fixes` on fixes whose proofs take the trace process down (issue 42): every class keeps its
findings as traced, and each fix says why it is not offered, in the JSON and in the diagnostic's own fix text. After
two proofs lost in a file, fxlens proves no other of its fixes in that trace (each lost proof costs a trace again),
and says so."""

from __future__ import annotations

import json
import shutil

from fxlens_command import ROOT, fxlens

SEGFAULTS = ROOT / "tests" / "fixtures" / "hostile" / "proof_segfaults.py"
CRASHED = "not proven: the trace process crashed while it proved this fix with a segmentation fault (SIGSEGV)"


def test_fixes_whose_proofs_crash_are_said_not_proven_and_their_classes_keep_their_findings(tmp_path):
    shutil.copy(SEGFAULTS, tmp_path / "pools.py")
    hostile = next(n for n, line in enumerate(SEGFAULTS.read_text().splitlines(), 1) if "# HOSTILE" in line)
    run = fxlens(
        "check", "--show-fixes", "--no-cache", "--level", "fx", "--level", "aten", "--format", "json", "pools.py",
        cwd=tmp_path,
    )  # fmt: skip
    result = json.loads(run.stdout)
    diagnostics = result["diagnostics"]
    # the findings as traced (fx's own failure at `len(x)`, aten exported), not a crash of the class
    assert [(d["class_name"], d["level"], d["category"]) for d in diagnostics] == [
        ("MeanPool", "fx", "builtin-on-proxy"),
        ("RootPool", "fx", "builtin-on-proxy"),
        ("LastPool", "fx", "builtin-on-proxy"),
    ]
    assert result["summary"]["errors"] == 3 and run.returncode == 1, run.stderr
    fixes = [d["fixes"] for d in diagnostics]
    assert all(len(f) == 1 and f[0]["rule"] == "shape-not-len" and not f[0]["proven"] for f in fixes)
    first, second, third = (f[0]["why_not"] for f in fixes)
    for why in (first, second):
        assert why.startswith(CRASHED) and f"(it was running line {hostile}: `_LIBC.memset(" in why, why
    assert third == "not proven: fxlens proves no other fix of this file in this trace, 2 proofs having ended it"
    # the diagnostic's own words carry it, as for every fix whose proof failed
    assert f"fxlens's rewrite `Use x.shape[0]` is not offered: {first}" in diagnostics[0]["fix"]

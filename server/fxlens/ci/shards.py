"""`fxlens check --shard K/N`: the K-th of N stable parts of a tree, so that CI can check a monorepo on N
machines at once; `fxlens merge` joins their outputs into one result and one exit status.

Every shard computes the same split from what they all see alike: the file list and, when a shared
cache folder is restored (the CI's cache action), the time each file took when it was last traced
(`costs.json` there). Without recorded costs, files go by a hash of their path (stable when files are
added: only the new ones land somewhere); with them, the slowest first to the least loaded shard.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile

COSTS_FILE = "costs.json"
_SHARD = re.compile(r"^(\d+)/(\d+)$")


def parse_shard(text: str) -> tuple[int, int]:
    """`"2/3"` -> (2, 3); ValueError with a message a user reads otherwise."""
    match = _SHARD.match(text.strip())
    if not match or not 1 <= int(match.group(1)) <= int(match.group(2)):
        raise ValueError(f"--shard takes K/N with 1 <= K <= N (e.g. 2/3), not {text!r}")
    return int(match.group(1)), int(match.group(2))


def _stable(path: str) -> int:
    return int.from_bytes(hashlib.sha256(path.encode()).digest()[:8], "big")


def split(paths: list[str], shards: int, costs: dict[str, float] | None = None) -> list[list[str]]:
    """`paths` (relative, `/`-separated) in `shards` parts, each in the order given."""
    parts: list[list[str]] = [[] for _ in range(shards)]
    known = {p: costs[p] for p in paths if costs and p in costs}
    if not known:
        for path in paths:
            parts[_stable(path) % shards].append(path)
        return parts
    typical = sorted(known.values())[len(known) // 2]
    load = [0.0] * shards
    for path in sorted(paths, key=lambda p: (-known.get(p, typical), _stable(p), p)):
        lightest = min(range(shards), key=lambda i: (load[i], i))
        parts[lightest].append(path)
        load[lightest] += known.get(path, typical)
    order = {p: i for i, p in enumerate(paths)}
    return [sorted(part, key=order.__getitem__) for part in parts]


def read_costs(folder: str | None) -> dict[str, float]:
    if not folder:
        return {}
    try:
        with open(os.path.join(folder, COSTS_FILE), encoding="utf-8") as handle:
            data = json.load(handle)
        return {str(k): float(v) for k, v in data.items()} if isinstance(data, dict) else {}
    except (OSError, ValueError, TypeError):
        return {}


def record_costs(folder: str | None, seconds: dict[str, float]) -> None:
    """Add what this run traced to the folder's costs (shards writing at once: the last file wins, and
    a lost entry only makes the next split a little less even)."""
    if not folder or not seconds:
        return
    costs = {**read_costs(folder), **{k: round(v, 3) for k, v in seconds.items()}}
    os.makedirs(folder, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=folder, suffix=".tmp")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        json.dump(costs, out, sort_keys=True)
    os.replace(temporary, os.path.join(folder, COSTS_FILE))

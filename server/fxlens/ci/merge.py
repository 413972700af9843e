"""`fxlens merge SHARD...`: the JSON or SARIF outputs of `fxlens check --shard K/N` runs joined into the
one result a single run would give (findings in path order, summaries added), with its exit status."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any


def add_arguments(merge: argparse.ArgumentParser) -> None:
    merge.add_argument("shards", nargs="+", metavar="FILE", help="the shards' `--format json` or `sarif` outputs")
    merge.add_argument("-o", "--output", metavar="FILE", help="write the merged result here instead of stdout")


def _kind(document: object) -> str:
    if isinstance(document, dict) and "runs" in document:
        return "sarif"
    if isinstance(document, dict) and "diagnostics" in document and "summary" in document:
        return "json"
    return ""


def merge_json(documents: list[dict[str, Any]]) -> dict[str, Any]:
    diagnostics = sorted((d for doc in documents for d in doc["diagnostics"]), key=lambda d: d.get("path", ""))
    summary: dict[str, Any] = {}
    for doc in documents:
        for key, value in doc["summary"].items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                summary[key] = max(summary.get(key, 0), value) if key == "jobs" else summary.get(key, 0) + value
    summary["shards"] = len(documents)
    return {"diagnostics": diagnostics, "summary": summary}


def merge_sarif(documents: list[dict[str, Any]]) -> dict[str, Any]:
    first = documents[0]
    runs = [run for doc in documents for run in doc.get("runs", [])]
    rules: dict[str, dict[str, Any]] = {}
    for run in runs:
        for rule in run.get("tool", {}).get("driver", {}).get("rules", []):
            rules.setdefault(rule["id"], rule)
    results = sorted(
        (r for run in runs for r in run.get("results", [])),
        key=lambda r: r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] if r.get("locations") else "",
    )
    run = {**runs[0], "results": results} if runs else {"results": []}
    if runs:
        run["tool"] = {
            **runs[0]["tool"],
            "driver": {**runs[0]["tool"]["driver"], "rules": sorted(rules.values(), key=lambda r: r["id"])},
        }
    return {**first, "runs": [run]}


def _errors(kind: str, merged: dict[str, Any]) -> int:
    if kind == "json":
        return sum(d.get("severity") == "error" for d in merged["diagnostics"])
    return sum(r.get("level") == "error" for run in merged["runs"] for r in run.get("results", []))


def run_merge(args: argparse.Namespace, usage_error: Callable[[str], Exception]) -> int:
    documents, kinds = [], set()
    for path in args.shards:
        try:
            with open(path, encoding="utf-8") as handle:
                document = json.load(handle)
        except OSError as error:
            raise usage_error(f"cannot read {path}: {error.strerror}") from error
        except ValueError as error:
            raise usage_error(f"{path} is not JSON: run the shards with --format json or --format sarif") from error
        kind = _kind(document)
        if not kind:
            raise usage_error(f"{path} is neither `fxlens check --format json` nor `--format sarif` output")
        documents.append(document)
        kinds.add(kind)
    if len(kinds) > 1:
        raise usage_error("the shards were written in different formats: merge JSON with JSON, SARIF with SARIF")
    kind = kinds.pop()
    merged = merge_json(documents) if kind == "json" else merge_sarif(documents)
    text = json.dumps(merged, indent=1)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    else:
        print(text)
    errors = _errors(kind, merged)
    print(f"{len(documents)} shard(s) merged, {errors} error(s)", file=sys.stderr)
    return 1 if errors else 0

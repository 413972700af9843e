"""The `fxlens.runPass` result: the preview's markdown, the report, and the graph after the pass with
each node's change ("added", "removed", "retargeted", "changed", or none), for clients that draw it (pure)."""

from __future__ import annotations

from typing import Any

from fxlens.pass_report import PassReport, pass_to_json
from fxlens.render.graph_text import graph_data
from fxlens.render.pass_text import pass_markdown
from fxlens.report import LevelResult


def pass_graph(report: PassReport) -> dict[str, Any]:
    """The after-graph's nodes and edges, plus the removed nodes (and their edges) marked "removed"."""
    change = {c.name: c.change for c in report.changes}
    removed = [n for n in report.nodes_before if change.get(n.name) == "removed"]
    graph = graph_data(LevelResult("fx", True, [*report.nodes_after, *removed]))
    for node in graph["nodes"]:
        node["change"] = change.get(node["id"])
    return graph


def pass_payload(uri: str, report: PassReport | None, message: str = "") -> dict[str, Any]:
    """Every key always present, like the showGraph payload."""
    if report is None:
        return {
            "uri": uri,
            "ok": False,
            "class": None,
            "pass": None,
            "verdict": None,
            "markdown": "",
            "report": None,
            "graph": {"nodes": [], "edges": []},
            "message": message,
        }
    return {
        "uri": uri,
        "ok": report.ok,
        "class": report.class_name,
        "pass": report.pass_name,
        "verdict": report.proof.verdict,
        "markdown": pass_markdown(report),
        "report": pass_to_json(report),
        "graph": pass_graph(report),
        "message": message,
    }

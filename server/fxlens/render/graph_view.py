"""The `fxlens.showGraph` result: one class at one level, as text and as data for clients that draw it.

The payload is a plain object that only grows: a client reads the keys it knows and ignores the rest,
so another field on a node or on the level never needs a new client.
"""

from __future__ import annotations

from typing import Any

from fxlens.render import kernels
from fxlens.render.cost import ATEN_LEVELS
from fxlens.render.graph_text import graph_data, level_text, node_table, printout
from fxlens.render.ladder import rung
from fxlens.render.view_scopes import derive_scopes
from fxlens.report import LEVEL_INFO, ClassReport, LevelResult, Node, to_json

# per node, what the graph view's details pane and search read beyond graph_data's drawing fields
_NODE_DETAILS = ("function", "text", "num_users", "flops", "graph", "phase", "saved", "bytes", "overload", "value")


def _levels_offered(cls: ClassReport | None) -> list[dict[str, Any]]:
    """Every level fxlens knows, in ladder order, with whether this class has it traced yet: the graph
    view's switcher offers them all (asking for an untraced one traces it)."""
    traced = cls.levels if cls else {}
    return [{"name": info.name, "what": info.what, "traced": info.name in traced} for info in LEVEL_INFO]


def _scopes(cls: ClassReport, result: LevelResult) -> dict[str, dict[str, Any]]:
    """Each submodule instance's class and call span. Only the fx tracer sees module calls; every level
    names scopes by the same instance path, so the deeper levels borrow the fx level's."""
    if result.scopes:
        return result.scopes
    fx = cls.levels.get("fx")
    return fx.scopes if fx is not None else {}


def _node_payload(drawn: dict[str, Any], node: Node) -> dict[str, Any]:
    return {**drawn, **{key: getattr(node, key, None) for key in _NODE_DETAILS}}


# levels whose nodes come without their module instance: the view's groups are derived for them
_DERIVED_SCOPES = ("dynamo", "backward")


def _once(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each node id once. The backward level's partitioned graphs name a saved value alike on both
    sides (the forward's `getitem_1` and the backward's input `getitem_1`): one tensor, drawn once,
    its edges running from the forward into the gradients; a view keys its boxes by id."""
    seen: set[str] = set()
    kept = []
    for node in nodes:
        if node["id"] not in seen:
            seen.add(node["id"])
            kept.append(node)
    return kept


def _graph(cls: ClassReport, result: LevelResult) -> dict[str, Any]:
    graph = graph_data(result)
    graph["nodes"] = [_node_payload(drawn, node) for drawn, node in zip(graph["nodes"], result.nodes)]
    kernels.colour_nodes(graph["nodes"], cls, result, ATEN_LEVELS)  # (drawn in the colour of their kernel)
    graph["nodes"] = _once(graph["nodes"])
    if result.level in _DERIVED_SCOPES:
        derive_scopes(graph["nodes"], graph["edges"], _scopes(cls, result), cls.name)
    return graph


def graph_payload(uri: str, cls: ClassReport | None, level: str, message: str = "") -> dict[str, Any]:
    """The command's JSON object; every key is always present so clients need no special cases."""
    payload: dict[str, Any] = {
        "uri": uri,
        "class": cls.name if cls else None,
        "level": level,
        "levels": list(cls.levels) if cls else [],
        "level_info": _levels_offered(cls),
        "ok": False,
        "printout": "",
        "code": "",
        "table": "",
        "diagnostics": [],
        "graph": {"nodes": [], "edges": []},
        "scopes": {},
        "schemas": {},
        # the forward's own inputs, by name: a view tells them from the parameters export lifts
        "inputs": [i.name for i in cls.build.inputs] if cls else [],
        "message": message,
        "rung": "",
    }
    result = cls.levels.get(level) if cls else None
    if cls is not None and result is None:
        traced = ", ".join(cls.levels)
        payload["message"] = message or f"level {level!r} was not traced for {cls.name} (it has: {traced})"
    if cls is None or result is None:
        return payload
    payload.update(
        ok=result.ok,
        printout=printout(result) if result.nodes else "",
        code=result.code,
        table=node_table(result) if result.nodes else "",
        diagnostics=[to_json(d) for d in result.diagnostics],
        graph=_graph(cls, result),
        scopes=_scopes(cls, result),
        schemas=result.schemas,
        # the worker's notes count bytes in KB ("492084.3 KB"): the view says them in KB/MB/GB
        message=message or result.note,
        rung=rung(result).name if result.ok else "",
    )
    return payload


def graph_document(path: str, cls: ClassReport, level: str) -> str:
    """What the read-only document shown to clients without a graph view holds."""
    text = level_text(path, cls, level)
    result = cls.levels.get(level)
    if result is not None and result.code:
        text += "\n\n# generated code\n" + result.code
    return text + "\n"

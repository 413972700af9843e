"""The `fxlens.showGraph` result: one class at one level, as text and as data for clients that draw it."""
from __future__ import annotations

from typing import Optional

from fxlens.render.graph_text import graph_data, level_text, node_table, printout
from fxlens.render.ladder import rung
from fxlens.report import ClassReport, to_json


def graph_payload(uri: str, cls: Optional[ClassReport], level: str, message: str = "") -> dict:
    """The command's JSON object; every key is always present so clients need no special cases."""
    payload = {"uri": uri, "class": cls.name if cls else None, "level": level,
               "levels": list(cls.levels) if cls else [], "ok": False, "printout": "", "code": "",
               "table": "", "diagnostics": [], "graph": {"nodes": [], "edges": []}, "message": message,
               "rung": ""}
    result = cls.levels.get(level) if cls else None
    if cls is not None and result is None:
        payload["message"] = message or f"level {level!r} was not traced for {cls.name} (it has: {', '.join(cls.levels)})"
    if result is None:
        return payload
    payload.update(ok=result.ok, printout=printout(result) if result.nodes else "", code=result.code,
                   table=node_table(result) if result.nodes else "",
                   diagnostics=[to_json(d) for d in result.diagnostics], graph=graph_data(result),
                   message=message or result.note, rung=rung(result).name if result.ok else "")
    return payload


def graph_document(path: str, cls: ClassReport, level: str) -> str:
    """What the read-only document shown to clients without a graph view holds."""
    text = level_text(path, cls, level)
    result = cls.levels.get(level)
    if result is not None and result.code:
        text += "\n\n# generated code\n" + result.code
    return text + "\n"

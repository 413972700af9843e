"""workspace/executeCommand `fxlens.kernelCode [uri, className, kernel, toDocument?]`: one kernel's code.

The result holds the class's inductor code (every kernel and the wrapper calling them, as inductor wrote
`output_code.py`) and where the kernel is in it (1-based `line` .. `end_line`): VS Code's `fxlens.showKernel`
(the hover's "show code" link) opens it as a read-only virtual document at the kernel. With `toDocument` true
the server writes it to a read-only file and asks the client to show it there (`window/showDocument` with the
kernel selected), for clients without that command.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Optional

from lsprotocol import types
from pygls.uris import from_fs_path

from fxlens.lsp.graph_files import GraphFiles
from fxlens.render.kernels import kernels
from fxlens.report import ClassReport, LevelResult, Node

if TYPE_CHECKING:
    from fxlens.lsp.server import FxlensServer

COMMAND = "fxlens.kernelCode"
LEVEL = "inductor"


def _text(args: tuple, index: int) -> Optional[str]:
    value = args[index] if len(args) > index else None
    return value if isinstance(value, str) and value else None


def kernel_payload(uri: str, cls: Optional[ClassReport], kernel: Optional[str], message: str = "") -> dict:
    """The command's JSON object (every key always present)."""
    payload = {"uri": uri, "class": cls.name if cls else None, "kernel": kernel, "ok": False, "target": "",
               "kind": "", "code": "", "line": None, "end_line": None, "language": "python", "message": message}
    result: Optional[LevelResult] = cls.levels.get(LEVEL) if cls else None
    if cls is None:
        return payload
    if result is None or not result.ok:
        payload["message"] = message or f"{cls.name} has no {LEVEL} level" + (
            f": {result.diagnostics[0].message}" if result is not None and result.diagnostics else "")
        return payload
    node: Optional[Node] = next((n for n in kernels(result) if n.name == kernel), None)
    if node is None:
        names = ", ".join(n.name for n in kernels(result)) or "none"
        payload["message"] = f"no kernel {kernel!r} in {cls.name}'s {LEVEL} level (it has: {names})"
        return payload
    start = node.kernel.get("code_line")
    source = node.kernel.get("code") or ""
    # a generated kernel's definition ends at its closing quotes, a call at the start of the next line
    end = start + source.count("\n") + (2 if node.kernel["kind"] == "fused" else 1) if start else None
    payload.update(ok=True, target=node.target, kind=node.kernel["kind"], code=result.code, line=start, end_line=end)
    return payload


def register(ls: "FxlensServer") -> None:
    files = GraphFiles()

    @ls.command(COMMAND)
    async def kernel_code(ls, *args: Any) -> dict:  # (pygls reads the annotations: none on `ls`)
        uri, name, kernel = _text(args, 0) or "", _text(args, 1), _text(args, 2)
        doc = ls.document(uri)
        if doc is None:
            return kernel_payload(uri, None, kernel, f"{uri or 'that document'} is not open")
        cls = doc.view().report.find_class(name or "")
        if cls is None:
            return kernel_payload(uri, None, kernel, f"no Module class {name!r} traced in this file")
        if LEVEL not in cls.levels:  # (a link is only shown once the level is there; a client may ask first)
            await ls.on_demand.ensure(doc, cls.name, (LEVEL,))
            cls = doc.view().report.find_class(cls.name) or cls
        payload = kernel_payload(uri, cls, kernel)
        if payload["ok"] and len(args) > 3 and args[3] is True:
            stem = os.path.splitext(os.path.basename(doc.path))[0]
            target = from_fs_path(files.write(f"{stem}.{cls.name}.{LEVEL}.py", payload["code"]))
            payload["document"] = target
            if ls.capability("window", "show_document", "support") and payload["line"]:
                start = types.Position(line=payload["line"] - 1, character=0)
                end = types.Position(line=(payload["end_line"] or payload["line"]) - 1, character=0)
                await ls.window_show_document_async(types.ShowDocumentParams(
                    uri=target, take_focus=True, selection=types.Range(start=start, end=end)))
        return payload

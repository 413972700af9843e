"""workspace/executeCommand `fxlens.kernelCode [uri, className, kernel, toDocument?]`: one kernel's code.

The result holds the class's inductor code (every kernel and the wrapper calling them, as inductor wrote
`output_code.py`) and where the kernel is in it (1-based `line` .. `end_line`): VS Code's `fxlens.showKernel`
(the hover's "show code" link) opens it as a read-only virtual document at the kernel. With `toDocument` true
the server writes it to a read-only file and asks the client to show it there (`window/showDocument` with the
kernel selected), for clients without that command.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import from_fs_path

from fxlens.lsp.command_arguments import ArgumentError, AsyncCommand, Payload, flag_at, text_at
from fxlens.render.kernels import kernels
from fxlens.report import ClassReport, LevelResult, Node

if TYPE_CHECKING:
    from fxlens.engine.documents import Document
    from fxlens.lsp.server import FxlensServer

COMMAND = "fxlens.kernelCode"
LEVEL = "inductor"


@dataclass(frozen=True)
class KernelCodeArguments:
    """`[uri, className, kernel, toDocument?]`."""

    uri: str
    class_name: str
    kernel: str
    to_document: bool

    @classmethod
    def parse(cls, arguments: Sequence[Any]) -> KernelCodeArguments | ArgumentError:
        uri, class_name, kernel = text_at(arguments, 0), text_at(arguments, 1), text_at(arguments, 2)
        if uri is None or class_name is None or kernel is None:
            return ArgumentError("[uri of an open document, className, kernel, toDocument?]")
        return cls(uri, class_name, kernel, flag_at(arguments, 3))


def kernel_payload(uri: str, cls: ClassReport | None, kernel: str | None, message: str = "") -> Payload:
    """The command's JSON object (every key always present)."""
    payload: Payload = {
        "uri": uri,
        "class": cls.name if cls else None,
        "kernel": kernel,
        "ok": False,
        "target": "",
        "kind": "",
        "code": "",
        "line": None,
        "end_line": None,
        "language": "python",
        "message": message,
    }
    result: LevelResult | None = cls.levels.get(LEVEL) if cls else None
    if cls is None:
        return payload
    if result is None or not result.ok:
        payload["message"] = message or f"{cls.name} has no {LEVEL} level" + (
            f": {result.diagnostics[0].message}" if result is not None and result.diagnostics else ""
        )
        return payload
    node: Node | None = next((n for n in kernels(result) if n.name == kernel), None)
    if node is None:
        names = ", ".join(n.name for n in kernels(result)) or "none"
        payload["message"] = f"no kernel {kernel!r} in {cls.name}'s {LEVEL} level (it has: {names})"
        return payload
    about = node.kernel or {}  # (a node `kernels` returns has one)
    start = about.get("code_line")
    source = about.get("code") or ""
    # a generated kernel's definition ends at its closing quotes, a call at the start of the next line
    end = start + source.count("\n") + (2 if about["kind"] == "fused" else 1) if start else None
    payload.update(ok=True, target=node.target, kind=about["kind"], code=result.code, line=start, end_line=end)
    return payload


async def kernel_code(ls: FxlensServer, args: KernelCodeArguments) -> Payload:
    doc = ls.document(args.uri)
    if doc is None:
        return kernel_payload(args.uri, None, args.kernel, f"{args.uri} is not open")
    cls = doc.view().report.find_class(args.class_name)
    if cls is None:
        return kernel_payload(args.uri, None, args.kernel, f"no Module class {args.class_name!r} traced in this file")
    if LEVEL not in cls.levels:  # (a link is only shown once the level is there; a client may ask first)
        await ls.on_demand.ensure(doc, cls.name, (LEVEL,))
        cls = doc.view().report.find_class(cls.name) or cls
    payload = kernel_payload(args.uri, cls, args.kernel)
    if payload["ok"] and args.to_document:
        payload["document"] = await _show_document(ls, doc, cls, payload)
    return payload


async def _show_document(ls: FxlensServer, doc: Document, cls: ClassReport, payload: Payload) -> str:
    """The URI of a new read-only file holding the code, which the client is asked to show at the kernel."""
    stem = os.path.splitext(os.path.basename(doc.path))[0]
    target: str = from_fs_path(ls.graph_files.write(f"{stem}.{cls.name}.{LEVEL}.py", payload["code"]))
    if ls.capability("window", "show_document", "support") and payload["line"]:
        start = types.Position(line=payload["line"] - 1, character=0)
        end = types.Position(line=(payload["end_line"] or payload["line"]) - 1, character=0)
        await ls.window_show_document_async(
            types.ShowDocumentParams(uri=target, take_focus=True, selection=types.Range(start=start, end=end))
        )
    return target


def _refused(message: str) -> Payload:
    return kernel_payload("", None, None, message)


KERNEL_CODE = AsyncCommand(COMMAND, KernelCodeArguments.parse, kernel_code, _refused)

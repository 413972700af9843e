"""Graph passes in the editor: "Run pass …" code actions on a class line and on a `# fxlens: pass`
function's `def`, the `fxlens.runPass` command that returns (and opens) the preview, `fxlens.passChoices`
for a client's own picker, and diagnostics in the pass's own file, refreshed while it is edited.

`fxlens.runPass [uri, className, passName, passUri?, toDocument?]`: passUri names the open document
defining a user pass (default: uri); toDocument true writes the preview to a read-only markdown file and
asks the client to show it. The result is render/pass_view.py's payload.

`fxlens.passChoices [uri]`: what a pass can run on in that document, and which passes:
`{"classes": [{"name", "runnable", "why"}], "passes": [{"name", "kind", "what", "passUri", "file"}]}`, the
classes in file order (one that could not be built has `runnable` false and `why`, and gets no action).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.uris import from_fs_path

from fxlens.engine.documents import Document
from fxlens.engine.pass_runs import Outcome, PassRun
from fxlens.lsp.command_arguments import (
    ArgumentError,
    AsyncCommand,
    Command,
    DocumentArguments,
    Payload,
    flag_at,
    text_at,
)
from fxlens.pass_catalog import BUILTIN_PASSES, builtin, cannot_run_on, user_passes
from fxlens.pass_report import PassInfo
from fxlens.render.pass_view import pass_payload

if TYPE_CHECKING:
    from fxlens.lsp.server import FxlensServer

RUN_PASS_COMMAND = "fxlens.runPass"
RUN_PASS_EXPECTS = "[uri of an open document, class name, pass name]"
PASS_CHOICES_COMMAND = "fxlens.passChoices"


def available(ls: FxlensServer, doc: Document) -> list[tuple[PassInfo, Document]]:
    """Built-ins, then the `# fxlens: pass` functions of this document and of the other open ones."""
    found: list[tuple[PassInfo, Document]] = [(p, doc) for p in BUILTIN_PASSES]
    for other in [doc, *(d for d in ls.documents if d is not doc and d.path.endswith(".py"))]:
        found += [(p, other) for p in user_passes(other.path, other.text)]
    return found


def _title(info: PassInfo, where: Document, doc: Document, class_name: str) -> str:
    origin = "" if info.kind == "builtin" or where is doc else f" ({os.path.basename(where.path)})"
    return f"Run pass {info.name}{origin} on {class_name}"


def _action(title: str, model: Document, class_name: str, info: PassInfo, where: Document) -> types.CodeAction:
    arguments = [model.uri, class_name, info.name, where.uri, True]
    return types.CodeAction(
        title=title,
        kind=types.CodeActionKind.Refactor,
        command=types.Command(title=title, command=RUN_PASS_COMMAND, arguments=arguments),
    )


def runnable(doc: Document) -> list[str]:
    """The classes of `doc`'s report a pass can run on (built), in file order."""
    return [c.name for c in doc.view().report.classes if not cannot_run_on(c)]


def actions(ls: FxlensServer, doc: Document, first: int, last: int) -> list[types.CodeAction]:
    """One action per available pass for each buildable class whose `class` line is in lines first..last;
    on a `# fxlens: pass` function's `def` line, one per class of its file it can run on (of the other
    open documents when its file has none)."""
    found = []
    for cls in doc.view().report.classes:
        if first <= cls.line <= last and not cannot_run_on(cls):
            found += [
                _action(_title(info, where, doc, cls.name), doc, cls.name, info, where)
                for info, where in available(ls, doc)
            ]
    marked = [p for p in user_passes(doc.path, doc.text) if p.line is not None and first <= p.line <= last]
    if marked:
        models = [(doc, name) for name in runnable(doc)] or [
            (other, name) for other in ls.documents if other is not doc for name in runnable(other)
        ]
        for info in marked:
            for model, name in models:
                origin = "" if model is doc else f" ({os.path.basename(model.path)})"
                found.append(_action(f"Run pass {info.name} on {name}{origin}", model, name, info, doc))
    return found


def choices(ls: FxlensServer, doc: Document) -> Payload:
    """`fxlens.passChoices`'s answer for `doc` (see the module's docstring)."""
    classes = [
        {"name": c.name, "runnable": not cannot_run_on(c), "why": cannot_run_on(c)} for c in doc.view().report.classes
    ]
    passes = [
        {
            "name": info.name,
            "kind": info.kind,
            "what": info.what,
            "passUri": where.uri,
            "file": "" if info.kind == "builtin" else os.path.basename(where.path),
        }
        for info, where in available(ls, doc)
    ]
    return {"classes": classes, "passes": passes}


def _write_preview(doc: Document, markdown: str, class_name: str, pass_name: str) -> str:
    folder = os.path.join(tempfile.gettempdir(), f"fxlens-passes-{os.getuid()}")
    os.makedirs(folder, exist_ok=True)
    stem = os.path.splitext(os.path.basename(doc.path))[0]
    path = os.path.join(folder, f"{stem}.{class_name}.{pass_name}.md")
    if os.path.exists(path):
        os.chmod(path, 0o644)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(markdown)
    os.chmod(path, 0o444)  # generated output: read-only
    return path


def published(ls: FxlensServer, outcome: Outcome) -> None:
    """A run finished: the pass's file gets its diagnostics (with the trace's own)."""
    from fxlens.lsp import diagnostics

    target = outcome.run.pass_doc or outcome.run.model
    if ls.document(target.uri) is target:
        diagnostics.publish(ls, target)


@dataclass(frozen=True)
class RunPassArguments:
    """`[uri, className, passName, passUri?, toDocument?]`: the pass defined in passUri's document (default: uri)."""

    uri: str
    class_name: str
    pass_name: str
    pass_uri: str
    to_document: bool

    @classmethod
    def parse(cls, arguments: Sequence[Any]) -> RunPassArguments | ArgumentError:
        uri, class_name, pass_name = text_at(arguments, 0), text_at(arguments, 1), text_at(arguments, 2)
        if uri is None or class_name is None or pass_name is None:
            return ArgumentError(RUN_PASS_EXPECTS)
        return cls(uri, class_name, pass_name, text_at(arguments, 3) or uri, flag_at(arguments, 4))


def pass_choices(ls: FxlensServer, args: DocumentArguments) -> Payload:
    doc = ls.document(args.uri)
    return choices(ls, doc) if doc is not None else {"classes": [], "passes": []}


async def run_pass(ls: FxlensServer, args: RunPassArguments) -> Payload:
    doc = ls.document(args.uri)
    if doc is None:
        return pass_payload(args.uri, None, f"{RUN_PASS_COMMAND} needs {RUN_PASS_EXPECTS}")
    run = _pass_run(ls, doc, args)
    if run is None:
        return pass_payload(args.uri, None, f"no pass {args.pass_name!r}: mark a function `# fxlens: pass`")
    outcome = await ls.pass_runs.run(run)
    if outcome.report is None:
        problems = "; ".join(d.message for d in (outcome.file.all_diagnostics() if outcome.file else []))
        return pass_payload(args.uri, None, outcome.error or problems or f"no Module class {args.class_name!r} ran")
    payload = pass_payload(args.uri, outcome.report)
    if args.to_document:
        payload["document"] = await _show_preview(ls, doc, args, payload["markdown"])
    return payload


def _pass_run(ls: FxlensServer, doc: Document, args: RunPassArguments) -> PassRun | None:
    """The run asked for: a built-in pass, or one marked in the pass document; None when there is no such pass."""
    if builtin(args.pass_name):
        return PassRun(doc, args.class_name, args.pass_name, "builtin")
    pass_doc = ls.document(args.pass_uri)
    if pass_doc is not None and any(p.name == args.pass_name for p in user_passes(pass_doc.path, pass_doc.text)):
        return PassRun(doc, args.class_name, args.pass_name, "user", pass_doc)
    return None


async def _show_preview(ls: FxlensServer, doc: Document, args: RunPassArguments, markdown: str) -> str:
    """The URI of the read-only markdown file holding the preview, which the client is asked to show."""
    target: str = from_fs_path(_write_preview(doc, markdown, args.class_name, args.pass_name))
    if ls.capability("window", "show_document", "support"):
        await ls.window_show_document_async(types.ShowDocumentParams(uri=target, take_focus=False))
    return target


def _choices_refused(message: str) -> Payload:
    return {"classes": [], "passes": [], "message": message}


def _run_refused(message: str) -> Payload:
    return pass_payload("", None, message)


PASS_CHOICES = Command(PASS_CHOICES_COMMAND, DocumentArguments.parse, pass_choices, _choices_refused)
RUN_PASS = AsyncCommand(RUN_PASS_COMMAND, RunPassArguments.parse, run_pass, _run_refused)

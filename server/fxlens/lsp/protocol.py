"""pygls's protocol, answering requests whose params do not decode instead of dropping them.

pygls 2.1 raises while decoding such a message inside its read loop: the request never gets a
response (the client waits forever) and a notification turns into an "Error in server" popup.
Here a bad request gets a JSON-RPC "invalid params" error and a bad notification is logged and
dropped, which is what the protocol asks for. Likewise a change to a document that was never
opened (pygls raises KeyError) is logged and ignored, and an edit is applied in the editor's line
model (lsp/sync.py), not pygls's. After `shutdown`, a request gets InvalidRequest (pygls drops it
and the client waits forever), as the protocol asks.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Sequence
from types import SimpleNamespace
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import RPCMessage
from pygls.protocol.language_server import lsp_method

from fxlens.line_index import LineIndex
from fxlens.lsp import sync

log = logging.getLogger("fxlens")

# a message object that pygls's dispatcher ignores (its jsonrpc version is not "2.0")
_HANDLED = SimpleNamespace(jsonrpc="handled-by-fxlens")

# a builtin handler is a generator pygls steps through: each step yields the user's handler for it to run, with
# its arguments and no keyword arguments (what the handler returns is sent back in, unused here)
HandlerSteps = Generator[tuple[Callable[..., object], tuple[object, ...], None], object, None]


class FxlensProtocol(LanguageServerProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # per open document: the line index of the text pygls holds for it, carried through each edit
        self._line_indexes: dict[str, LineIndex] = {}

    def structure_message(self, data: dict[str, Any]) -> object:
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            method = data.get("method")
            if "id" in data and method is not None:
                self._send_response(data["id"], error=error.to_response_error())
            else:
                log.warning("dropped %s with params that do not decode: %s", method or "a message", error)
            return _HANDLED

    def handle_message(self, message: RPCMessage) -> None:
        method = getattr(message, "method", None)
        msg_id = getattr(message, "id", None)
        if self._shutdown and method not in (None, types.EXIT) and msg_id is not None:
            error = JsonRpcInvalidRequest(f"the server is shut down: {method} after shutdown")
            self._send_response(msg_id, error=error.to_response_error())
            return
        super().handle_message(message)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams) -> HandlerSteps:
        if unquote(params.text_document.uri) not in self.workspace.text_documents:
            log.warning("ignored a change to %s, which is not open", params.text_document.uri)
            return
        self._apply_changes(params.text_document, params.content_changes)
        if (handler := self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams) -> HandlerSteps:
        # built with the text, not on the first edit (a 5 MB text: ~3 ms, C-level counts)
        self._line_indexes[unquote(params.text_document.uri)] = LineIndex(params.text_document.text)
        yield from super().lsp_text_document__did_open(params)

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams) -> HandlerSteps:
        self._line_indexes.pop(unquote(params.text_document.uri), None)
        yield from super().lsp_text_document__did_close(params)

    @lsp_method(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def lsp_notebook_document__did_change(self, params: types.DidChangeNotebookDocumentParams) -> HandlerSteps:
        # pygls would apply the cells' text edits in its own line model: those are applied here instead
        cells = params.change.cells
        edits = cells.text_content if cells is not None else None
        if cells is not None:
            cells.text_content = None
        self.workspace.update_notebook_document(params)
        if cells is not None:
            cells.text_content = edits  # the handler sees the params as the client sent them
        for edit in edits or []:
            if unquote(edit.document.uri) in self.workspace.text_documents:
                self._apply_changes(edit.document, edit.changes, notebook_uri=params.notebook_document.uri)
        if (handler := self.fm.features.get(types.NOTEBOOK_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    def _apply_changes(
        self,
        identifier: types.VersionedTextDocumentIdentifier,
        changes: Sequence[types.TextDocumentContentChangeEvent],
        notebook_uri: str | None = None,
    ) -> None:
        document = self.workspace.get_text_document(identifier.uri)
        key = unquote(document.uri)
        index = self._line_indexes.get(key)
        if index is None or index.text is not document.source:
            index = LineIndex(document.source)  # opened, or replaced by something else since: once per text
        for change in changes:
            index = sync.apply(index, change, self.workspace.position_encoding)
        open_now = self.workspace.text_documents
        self._line_indexes = {uri: kept for uri, kept in self._line_indexes.items() if uri in open_now}
        self._line_indexes[key] = index
        self.workspace.put_text_document(
            types.TextDocumentItem(
                uri=document.uri,
                language_id=document.language_id or "python",
                version=identifier.version,
                text=index.text,
            ),
            notebook_uri=notebook_uri,
        )

"""pygls's protocol, answering requests whose params do not decode instead of dropping them.

pygls 2.1 raises while decoding such a message inside its read loop: the request never gets a
response (the client waits forever) and a notification turns into an "Error in server" popup.
Here a bad request gets a JSON-RPC "invalid params" error and a bad notification is logged and
dropped, which is what the protocol asks for. Likewise a change to a document that was never
opened (pygls raises KeyError) is logged and ignored.
"""
from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

log = logging.getLogger("fxlens")

# a message object that pygls's dispatcher ignores (its jsonrpc version is not "2.0")
_HANDLED = SimpleNamespace(jsonrpc="handled-by-fxlens")


class FxlensProtocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]):
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            method = data.get("method")
            if "id" in data and method is not None:
                self._send_response(data["id"], error=error.to_response_error())
            else:
                log.warning("dropped %s with params that do not decode: %s", method or "a message", error)
            return _HANDLED

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams):
        if unquote(params.text_document.uri) not in self.workspace.text_documents:
            log.warning("ignored a change to %s, which is not open", params.text_document.uri)
            return
        yield from super().lsp_text_document__did_change(params)

"""pygls' LSP protocol, hardened so that no message a client can send leaves a request unanswered.

* A request whose params do not fit the LSP type of a standard method (say `workspace/executeCommand`
  with a number for params) is answered with an `invalid-params` error instead of being dropped.
* A request with no `params` member is accepted (JSON-RPC allows it) and handled as `params: null`.
* Every error response carries a stable `data.code` (see `errors.py`), and no Python traceback.
"""

from __future__ import annotations

import asyncio
import inspect
import logging

from lsprotocol import converters
from lsprotocol.types import ResponseError
from pygls.exceptions import JsonRpcException
from pygls.protocol import (JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage,
                            LanguageServerProtocol)

from .encoding import Encoded, response_text
from .errors import INVALID_PARAMS, RPC_CODE_NAMES

log = logging.getLogger(__name__)


def converter_factory():
    """lsprotocol's converter, except that the params (and results) of methods lsprotocol does not
    know stay plain JSON values. pygls' default turns them into namedtuples, which renames keys that
    are not identifiers (`from`, `to`) and would hand the workbench something that is not a dict."""
    conv = converters.get_converter()

    def plain(fields):
        def hook(obj, cls):
            return cls(**{name: obj.get(name) for name in fields})
        return hook

    conv.register_structure_hook(JsonRPCRequestMessage, plain(("id", "method", "jsonrpc", "params")))
    conv.register_structure_hook(JsonRPCNotification, plain(("method", "jsonrpc", "params")))
    conv.register_structure_hook(JsonRPCResponseMessage, plain(("id", "jsonrpc", "result")))
    return conv


class _Answered:
    """Stands in for a message that was already answered with an error."""

    jsonrpc = None


class TurnbackProtocol(LanguageServerProtocol):
    def structure_message(self, data):
        if isinstance(data, dict) and "jsonrpc" in data:
            if "id" in data and (isinstance(data["id"], bool) or not isinstance(data["id"], (int, str))):
                # No answer can name this request; JSON-RPC ids are strings or numbers.
                log.warning("ignoring a message whose id is not a string or number: %r", data["id"])
                return _Answered()
            if "method" in data and "params" not in data:
                data = {**data, "params": None}
        try:
            return super().structure_message(data)
        except Exception:
            msg_id = data.get("id") if isinstance(data, dict) else None
            method = data.get("method") if isinstance(data, dict) else None
            if isinstance(method, str) and isinstance(msg_id, (int, str)) and not isinstance(msg_id, bool):
                log.warning("answering %s (id %r) with invalid-params: params do not fit its type",
                            method, msg_id)
                self._send_response(msg_id, error=ResponseError(
                    code=INVALID_PARAMS,
                    message=f"the params of {method} do not have the shape the protocol defines",
                    data={"code": "invalid-params", "method": method}))
                return _Answered()
            raise

    def handle_message(self, message):
        if isinstance(message, _Answered):
            return
        if not hasattr(message, "jsonrpc"):
            log.warning("ignoring a message that is not JSON-RPC: %r", message)
            return
        super().handle_message(message)

    def _send_handler_result(self, future, *, msg_id):
        # An expected failure (a JSON-RPC error the handler chose) is answered quietly: no traceback
        # on stderr for every ill-typed request a buggy client sends.
        exc = None if future.cancelled() else future.exception()
        if isinstance(exc, JsonRpcException):
            self._request_futures.pop(msg_id, None)
            log.info("request %r failed: %s", msg_id, exc.message)
            self._send_response(msg_id, error=exc.to_response_error())
            return
        super()._send_handler_result(future, msg_id=msg_id)

    def _send_response(self, msg_id, result=None, error=None):
        if error is not None:
            data = error.data if isinstance(error.data, dict) else (
                {} if error.data is None else {"detail": error.data})
            data = {k: v for k, v in data.items() if k != "traceback"}
            data.setdefault("code", RPC_CODE_NAMES.get(error.code, "internal"))
            error = ResponseError(code=error.code, message=error.message, data=data)
        elif isinstance(result, Encoded):  # written in slices already: sent as it is
            self._result_types.pop(msg_id, None)
            self._send_text(response_text(msg_id, result))
            return
        super()._send_response(msg_id, result, error)

    def _send_text(self, body: str) -> None:
        """pygls' `_send_data` for a message already written as JSON (ASCII: `encoded`'s default),
        so its length in characters is its length in bytes."""
        if self.writer is None:
            log.error("unable to send a response: no transport")
            return
        header = (f"Content-Length: {len(body)}\r\n"
                  f"Content-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n"
                  ) if self._include_headers else ""
        try:
            res = self.writer.write((header + body).encode(self.CHARSET))
            if inspect.isawaitable(res):
                asyncio.ensure_future(res)
        except BrokenPipeError:
            log.exception("could not send a response: the pipe is broken")
            raise

"""Turning what the core raises into JSON-RPC errors.

Every error the server sends carries `data.code`, a stable string clients may match on, and a
`message` a person can read. The numeric JSON-RPC code is secondary:

* `invalid-params` -> -32602 (Invalid params)
* an unexpected exception (`internal`) -> -32603 (Internal error); the server keeps running
* `not-initialized` -> -32002 (ServerNotInitialized)
* every other `TurnbackError` -> -32803 (LSP RequestFailed: the request was well formed but failed)
"""

from __future__ import annotations

import logging
import traceback

from pygls.exceptions import JsonRpcException

from ..errors import TurnbackError

log = logging.getLogger(__name__)

INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
METHOD_NOT_FOUND = -32601
SERVER_NOT_INITIALIZED = -32002
REQUEST_FAILED = -32803

# Stable `data.code` strings for errors that pygls itself produces (no TurnbackError behind them).
RPC_CODE_NAMES = {
    -32700: "parse-error",
    -32600: "invalid-request",
    METHOD_NOT_FOUND: "method-not-found",
    INVALID_PARAMS: "invalid-params",
    INTERNAL_ERROR: "internal",
    SERVER_NOT_INITIALIZED: "not-initialized",
    -32800: "cancelled",
    -32801: "content-modified",
}


class NotInitialized(TurnbackError):
    code = "not-initialized"


def rpc_code(code: str) -> int:
    if code == "invalid-params":
        return INVALID_PARAMS
    if code == "internal":
        return INTERNAL_ERROR
    if code == "not-initialized":
        return SERVER_NOT_INITIALIZED
    return REQUEST_FAILED


def to_rpc(exc: BaseException, method: str = "") -> JsonRpcException:
    """The JSON-RPC error for any exception a handler let through."""
    if isinstance(exc, JsonRpcException):
        return with_code(exc)
    if isinstance(exc, TurnbackError):
        data = exc.to_data()
        return JsonRpcException(message=exc.message, code=rpc_code(data.get("code", exc.code)), data=data)
    log.error("unexpected error in %s:\n%s", method or "a handler",
              "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
    where = f" while handling {method}" if method else ""
    return JsonRpcException(
        message=f"turnback hit an unexpected error{where} ({type(exc).__name__}: {exc}); "
                "the server is still running and nothing was half-written",
        code=INTERNAL_ERROR,
        data={"code": "internal", "exception": type(exc).__name__})


def with_code(exc: JsonRpcException) -> JsonRpcException:
    """Make sure a pygls-made error also carries a stable `data.code`."""
    data = exc.data if isinstance(exc.data, dict) else ({} if exc.data is None else {"detail": exc.data})
    if "code" not in data:
        data = {"code": RPC_CODE_NAMES.get(exc.code, "internal"), **data}
    data.pop("traceback", None)
    exc.data = data
    return exc

"""Checking the shape of what callers send, so a bad request is an `invalid-params` error, never a crash."""

from __future__ import annotations

from typing import Any

from ..errors import InvalidParams

_MISSING = object()


def obj(params: Any, what: str = "params") -> dict:
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise InvalidParams(f"{what} must be an object, not {type(params).__name__}")
    return params


def field(params: dict, name: str, kind, *, default=_MISSING, choices=None, allow_none=False):
    value = params.get(name, _MISSING)
    if value is _MISSING or (value is None and not allow_none):
        if default is not _MISSING:
            return default
        raise InvalidParams(f"missing required field '{name}'", data={"field": name})
    if value is None and allow_none:
        return None
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool) and bool not in kinds:
        raise InvalidParams(f"field '{name}' must be {_names(kinds)}, not a boolean", data={"field": name})
    if not isinstance(value, kinds):
        raise InvalidParams(f"field '{name}' must be {_names(kinds)}, not {type(value).__name__}",
                            data={"field": name})
    if choices is not None and value not in choices:
        raise InvalidParams(f"field '{name}' must be one of {', '.join(map(str, choices))}",
                            data={"field": name})
    if isinstance(value, int) and not isinstance(value, bool) and int in kinds and value < 0:
        raise InvalidParams(f"field '{name}' must not be negative", data={"field": name})
    return value


def str_list(params: dict, name: str, *, default=_MISSING) -> list[str]:
    value = field(params, name, list, default=default)
    if any(not isinstance(v, str) for v in value):
        raise InvalidParams(f"field '{name}' must be a list of strings", data={"field": name})
    return value


def _names(kinds) -> str:
    names = {int: "an integer", str: "a string", bool: "a boolean", list: "a list", dict: "an object",
             float: "a number"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


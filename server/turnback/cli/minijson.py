"""A small JSON reader for the lean command path (cli/turnwire.py): the `json` module imports `re`
and `enum`, which cost a command's start more than reading one small answer by hand does."""

from __future__ import annotations


def decode(text: str):
    """Parse one JSON document (RFC 8259); ValueError if it is not one."""
    value, at = _value(text, _ws(text, 0))
    if _ws(text, at) != len(text):
        raise ValueError("trailing data after the JSON document")
    return value


def _ws(s: str, i: int) -> int:
    while i < len(s) and s[i] in " \t\r\n":
        i += 1
    return i


_WORDS = {"true": True, "false": False, "null": None}


def _value(s: str, i: int):
    if i >= len(s):
        raise ValueError("unexpected end of the JSON document")
    ch = s[i]
    if ch == "{":
        out: dict = {}

        def member(j):
            key, j = _string(s, _ws(s, j))
            j = _ws(s, j)
            if s[j:j + 1] != ":":
                raise ValueError(f"expected ':' at {j}")
            out[key], j = _value(s, _ws(s, j + 1))
            return j
        return out, _container(s, i, "}", member)
    if ch == "[":
        items: list = []

        def item(j):
            value, j = _value(s, _ws(s, j))
            items.append(value)
            return j
        return items, _container(s, i, "]", item)
    if ch == '"':
        return _string(s, i)
    for word, value in _WORDS.items():
        if s.startswith(word, i):
            return value, i + len(word)
    j = i
    while j < len(s) and s[j] in "+-0123456789.eE":
        j += 1
    number = s[i:j]
    if not number:
        raise ValueError(f"unexpected {ch!r} at {i}")
    return (float(number) if any(c in number for c in ".eE") else int(number)), j


def _container(s: str, i: int, close: str, element) -> int:
    """Read the elements of an object or array opening at `i`; returns where it ends."""
    i = _ws(s, i + 1)
    if s[i:i + 1] == close:
        return i + 1
    while True:
        i = _ws(s, element(i))
        if s[i:i + 1] == close:
            return i + 1
        if s[i:i + 1] != ",":
            raise ValueError(f"expected ',' or {close!r} at {i}")
        i += 1


def _string(s: str, i: int):
    if s[i:i + 1] != '"':
        raise ValueError(f"expected a string at {i}")
    out, i = [], i + 1
    while True:
        j = i
        while j < len(s) and s[j] not in '"\\':
            j += 1
        out.append(s[i:j])
        if j >= len(s):
            raise ValueError("unterminated string")
        if s[j] == '"':
            return "".join(out), j + 1
        esc = s[j + 1:j + 2]
        if esc == "u":
            code = int(s[j + 2:j + 6], 16)
            i = j + 6
            if 0xD800 <= code < 0xDC00 and s[i:i + 2] == "\\u":  # a surrogate pair
                low = int(s[i + 2:i + 6], 16)
                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                i += 6
            out.append(chr(code))
        else:
            out.append({"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "/": "/",
                        "\\": "\\", '"': '"'}[esc])
            i = j + 2

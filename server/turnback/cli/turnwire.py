"""The leanest `turnback turn begin`, `turn capture`, `turn settle` and `turn respond --turn N`: one
request to the live owner (a settle without `--turn` settles the running turn, and the owner's
answer names it; it answers once the settle is durable, and publishes the head right after, before
any other change).

An agent's hooks and scripts run these on every prompt and every tool call, so what they cost is
a process start plus one round trip, flat whatever the size of the workspace (the owner's watcher has
the dirty set; the owner does no walk). The general remote path (`remote.py`) first probes the
socket, then asks for `session/info` to check paths and render them, and imports `json` (with `re`
and `enum`) and the renderer: about half of a command's time here. This one connects once, writes
the request by hand, reads the answer with the small reader below, and prints what `commands.py`
prints. Anything unusual (`--json`, `--store`, a path outside the workspace, no owner, a gap to
describe) goes back to the general path, which says it exactly as before.
"""

from __future__ import annotations

import os
import sys

EXIT_OK, EXIT_ERROR, EXIT_NOT_OWNER = 0, 1, 3
NOTIFICATION = b'{"jsonrpc": "2.0", "method": '  # what the owner fans out to every connection
BEGUN = b'{"jsonrpc": "2.0", "id": 1, "result": {"turn": '
TIMEOUT_SECONDS = 600.0
WATCH_SECONDS = 0.05  # how often a waiting command looks whether its owner was stopped or died
_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~/")


def file_uri(absolute: str) -> str:
    """`Path(absolute).as_uri()` without importing pathlib and urllib."""
    return "file://" + "".join(chr(b) if b in _SAFE else f"%{b:02X}" for b in os.fsencode(absolute))


def run(args) -> int | None:
    """The command's exit status, or None to let the general path run it."""
    sub = getattr(args, "turn_command", None)
    if args.command != "turn" or sub not in ("begin", "capture", "settle", "respond") \
            or (args.json and sub not in ("begin", "settle")) or args.store is not None:
        return None
    workspace = args.workspace or os.getcwd()
    root = os.path.realpath(workspace)
    if sub == "settle":  # answered once durable: the owner publishes its head right after
        params: dict[str, object] = {"status": "cancelled" if args.cancelled else "settled"}
        if not args.json:  # `--json` promises the published head (docs/protocol.md)
            params["answer"] = "durable"
        if args.turn is not None:
            params["turn"] = args.turn
    elif sub == "respond":
        if args.turn is None:
            return None  # the running turn: the general path asks `session/info` for it first
        params = {"turn": args.turn, "text": args.text, "final": bool(args.final)}
    elif sub == "begin":
        params = {"kind": args.kind or ("directive" if args.directive else "chat"),
                  "prompt": args.prompt}
        if args.directive:
            params["directiveId"] = args.directive
    else:
        roots = {os.path.abspath(workspace).rstrip("/") + "/", root.rstrip("/") + "/"}
        absolute = [os.path.abspath(p) for p in args.paths]
        if not all(any(a.startswith(r) for r in roots) for a in absolute):
            return None  # the general path refuses it, in its own words
        params = {"uris": [file_uri(a) for a in absolute], "phase": args.phase}
    try:
        request = ('{"jsonrpc":"2.0","id":1,"method":"turnback/turn/%s","params":%s}'
                   % (sub, encode(params))).encode("utf-8")
    except UnicodeEncodeError:
        return None  # a name that is not UTF-8: the general path says what it makes of it
    from ..remote.paths import check_private, recorded_socket, store_dir
    from ..remote.wire import connect, framed, peer

    path = recorded_socket(store_dir(workspace))
    if path is None:
        return None
    try:
        check_private(path)
        sock = connect(path, TIMEOUT_SECONDS)
        who = peer(sock)
    except Exception:  # noqa: BLE001 - no owner, or one the general path will describe
        return None
    pid = who[0] if who else None
    if _cannot_answer(pid):  # stopped: the general path says so, or takes a lease that ran out
        sock.close()
        return None
    try:
        sock.settimeout(WATCH_SECONDS)
        reader = _watching_reader(sock, pid)
        message = _exchange(sock, reader, framed(request))
        if sub == "settle" and "turn" not in params:  # the owner settled the running turn
            message = _named_turn(message, params)
            if message is None:
                return None  # nothing ran: the general path says so in its own words
    except _Unanswerable as exc:  # sent: it may run once the owner is woken, so not again here
        print(f"error [unresponsive]: {exc} (its socket {path}); it did not answer "
              f"turnback/turn/{sub}, which it may still run when it is woken", file=sys.stderr)
        return EXIT_NOT_OWNER
    except Exception as exc:  # noqa: BLE001 - a broken exchange: it may have run, so not again
        print(f"error [unreachable]: the exchange with the owner at {path} broke off: {exc}",
              file=sys.stderr)
        return EXIT_ERROR
    finally:
        sock.close()
    error = message.get("error") if isinstance(message, dict) else None
    if error is not None:
        data = error.get("data")
        if not isinstance(data, dict):
            data = {}
        code = str(data.get("code", "internal"))
        print(f"error [{code}]: {error.get('message', '')}", file=sys.stderr)
        return EXIT_NOT_OWNER if code == "not-owner" else EXIT_ERROR
    result = message.get("result") if isinstance(message, dict) else None
    if not isinstance(result, dict):
        result = {"value": result}
    if args.json:  # what `Context.emit` prints: json.dumps(indent=2, ensure_ascii=False)
        print(pretty(result))
        return EXIT_OK
    if sub == "begin":
        print(result["turn"])
        return EXIT_OK
    if sub == "respond":
        return EXIT_OK  # the general path prints nothing either
    if sub == "settle":
        head = result.get("headSeq")
        which = f"turn {params['turn']}" if "turn" in params else "the running turn"
        print(f"{which} {params['status']}"
              + (f"; published head {head}" if head is not None else "")
              + ("; its head is published next" if result.get("publishing") else ""))
        return EXIT_OK
    for line in captured_lines(result, root):
        print(line)
    return EXIT_OK


def _named_turn(message, params: dict):
    """A settle sent without `turn` settles the running one, and its answer names it (one round
    trip, where asking `session/info` first took two). None when no turn was running (the general
    path words it); an owner that does not name it (an older one) leaves it unnamed."""
    error = message.get("error") if isinstance(message, dict) else None
    if isinstance(error, dict):
        data = error.get("data")
        if not isinstance(data, dict):
            data = {}
        return None if data.get("code") == "no-turn-running" else message
    result = message.get("result") if isinstance(message, dict) else None
    turn = result.get("turn") if isinstance(result, dict) else None
    if isinstance(turn, int):
        params["turn"] = turn
    return message


def _exchange(sock, reader, request: bytes):
    """One request on the connection and its answer (the owner's notifications skipped)."""
    sock.sendall(request)  # a few hundred bytes: the kernel takes them at once
    reply = reader.body()
    while reply.startswith(NOTIFICATION):
        reply = reader.body()
    return _reply(reply)


class _Unanswerable(Exception):
    """The owner was stopped (SIGSTOP, a debugger) or died while the command waited."""


def _cannot_answer(pid) -> str | None:
    """Why process `pid` cannot answer now ("... is stopped", "... has exited"), or None: the
    hook's own look (/proc/PID/stat), so the two faces give an owner up alike."""
    from ..remote.paths import owner_gone

    return owner_gone(pid)


def _watching_reader(sock, pid):
    """The socket's reader, in short slices, looking between them whether the owner can still
    answer: a stopped owner would otherwise hold the command for TIMEOUT_SECONDS (a commit of a
    big tree may take minutes, so a running owner is waited for that long)."""
    import time

    from ..remote.wire import Reader

    deadline = time.monotonic() + TIMEOUT_SECONDS

    class Watching(Reader):
        def _fill(self) -> None:
            while True:
                try:
                    return super()._fill()
                except TimeoutError:
                    why = _cannot_answer(pid)
                    if why:
                        raise _Unanswerable(why) from None
                    if time.monotonic() >= deadline:
                        raise

    return Watching(sock)


def _reply(reply: bytes):
    """The answer as data. A begin's usual answer is recognised byte for byte (the owner's socket
    writes with json.dumps' defaults); anything else goes through the small reader."""
    if reply.startswith(BEGUN) and reply.endswith(b"}}") and reply[len(BEGUN):-2].isdigit():
        return {"result": {"turn": int(reply[len(BEGUN):-2])}}
    from .minijson import decode

    return decode(reply.decode("utf-8"))


def captured_lines(result: dict, root: str) -> list[str]:
    """What `Renderer.captured` prints, for the usual answer (gaps are worded by the renderer)."""
    if result.get("gaps"):
        from pathlib import Path

        from .render import Renderer

        return Renderer(Path(root).as_uri()).captured(result)
    prefix = root.rstrip("/") + "/"
    lines = []
    for c in result["captured"]:
        image = "(absent)" if c.get("absent") else (c.get("digest") or "no image")[:8]
        name = c.get("checkpoint")
        where = _path_of(c.get("uri") or "", prefix)
        lines.append(f"{where}  {image}  " + (f"checkpoint {name}" if name else "(no change recorded)"))
    return lines


def _path_of(uri: str, prefix: str) -> str:
    if not uri:
        return "(session)"
    text = _unquote(uri[len("file://"):]) if uri.startswith("file://") else uri
    return text[len(prefix):] if text.startswith(prefix) else text


def _unquote(text: str) -> str:
    if "%" not in text:
        return text
    out, i, raw = bytearray(), 0, text.encode("utf-8")
    while i < len(raw):
        if raw[i] == 0x25 and _hex(raw[i + 1:i + 3]):
            out.append(int(raw[i + 1:i + 3], 16))
            i += 3
        else:
            out.append(raw[i])
            i += 1
    return out.decode("utf-8", "replace")


def _hex(two: bytes) -> bool:
    return len(two) == 2 and all(c in b"0123456789abcdefABCDEF" for c in two)


# -- a small JSON writer (the `json` module imports `re` and `enum`; minijson.py reads) --------

_ESCAPE = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b",
           "\f": "\\f"}


def pretty(value, level: int = 0) -> str:
    """`json.dumps(value, indent=2, ensure_ascii=False)`, byte for byte, for JSON's own types (an
    owner's answer, read back): a script's `turn begin --json` and `turn settle --json` stay lean."""
    if isinstance(value, float):
        return {float("inf"): "Infinity", float("-inf"): "-Infinity"}.get(value) or (
            "NaN" if value != value else float.__repr__(value))
    if isinstance(value, (list, tuple, dict)) and value:
        inner, outer = "\n" + "  " * (level + 1), "\n" + "  " * level
        items = ([f"{encode(str(k))}: {pretty(v, level + 1)}" for k, v in value.items()]
                 if isinstance(value, dict) else [pretty(v, level + 1) for v in value])
        ends = "{}" if isinstance(value, dict) else "[]"
        return ends[0] + inner + ("," + inner).join(items) + outer + ends[1]
    return encode(value)


def encode(value) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return pretty(value)
    if isinstance(value, str):
        return '"' + "".join(_ESCAPE.get(ch) or (f"\\u{ord(ch):04x}" if ord(ch) < 0x20 else ch)
                             for ch in value) + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(encode(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{encode(str(k))}:{encode(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot encode {type(value).__name__}")

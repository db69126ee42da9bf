"""A model server on loopback that speaks the Anthropic Messages, OpenAI Responses and Chat
Completions, and Gemini (`generateContent`, `streamGenerateContent`) APIs and answers from a
`Script`.

Every request is kept (`requests`), so a test can read exactly what the agent sent the model: the
conversation after a resume, the context a hook added, the tools on offer. `wait_for` is the gate a
test waits on (the agent reached the reply that hangs, the third request came in), never a sleep.
"""

from __future__ import annotations

import gzip
import http.server
import json
import threading
import time
import zlib
from dataclasses import dataclass, field

from . import anthropic, chat, gemini, responses
from .script import Choice, Item, Script, say

APIS = {"messages": anthropic, "responses": responses, "gemini": gemini, "chat": chat}


@dataclass
class Request:
    api: str  # messages | responses | gemini | chat | other
    method: str
    path: str
    headers: dict
    body: dict
    convo: list[Item] = field(default_factory=list)
    choice: Choice | None = None
    at: float = field(default_factory=time.monotonic)

    @property
    def agent_loop(self) -> bool:
        return self.api in APIS and APIS[self.api].is_agent_loop(self.body)

    def user_texts(self) -> list[str]:
        return [i.text for i in self.convo if i.role == "user" and i.kind == "text"]


class ModelServer:
    def __init__(self, script: Script | None = None, *, model: str = "mock-model"):
        self.script = script or Script()
        self.model = model
        self.requests: list[Request] = []
        self._cond = threading.Condition()
        self._closing = threading.Event()
        self._serial = 0
        self._http = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._http.daemon_threads = True
        self._thread = threading.Thread(target=self._http.serve_forever, name="mock-model",
                                        daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}"

    def __enter__(self) -> "ModelServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._closing.set()
        self._http.shutdown()
        self._http.server_close()

    # -- what tests read ------------------------------------------------------------------------
    def loop_requests(self) -> list[Request]:
        with self._cond:
            return [r for r in self.requests if r.agent_loop]

    def wait_for(self, predicate, timeout: float = 60.0) -> Request:
        """The first kept request that satisfies `predicate`, waiting for it to come in."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for r in self.requests:
                    if predicate(r):
                        return r
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no such request among {len(self.requests)} in {timeout}s")
                self._cond.wait(left)

    def _keep(self, req: Request) -> int:
        with self._cond:
            self.requests.append(req)
            self._serial += 1
            self._cond.notify_all()
            return self._serial

    def _answer(self, api: str, body: dict, req: Request) -> tuple[int, str, bytes, bool]:
        """(status, content type, body, hang) for one agent request."""
        mod = APIS[api]
        if not mod.is_agent_loop(body):
            choice = Choice(None, -1, 0, say(gemini.side_answer(body) if api == "gemini" else "OK"))
        else:
            choice = self.script.choose(req.convo)
        req.choice = choice
        serial = self._keep(req)
        reply = choice.reply
        if reply.error:
            status, kind, message = reply.error
            return status, "application/json", mod.error(status, kind, message), False
        if (api == "gemini" and "streamGenerateContent" not in req.path) or (
                api == "chat" and not body.get("stream")):
            if reply.hang:
                return 200, "application/json", b"", True
            return 200, "application/json", mod.whole(reply, choice.turn, choice.step,
                                                       self.model, serial), False
        if reply.hang:
            return 200, "text/event-stream", mod.start(self.model, serial), True
        return 200, "text/event-stream", mod.stream(reply, choice.turn, choice.step, self.model,
                                                    serial), False


def _decode(headers, raw: bytes) -> bytes:
    enc = (headers.get("content-encoding") or "").lower()
    if enc == "gzip":
        return gzip.decompress(raw)
    if enc == "deflate":
        return zlib.decompress(raw)
    if enc == "zstd":
        import zstandard

        return zstandard.ZstdDecompressor().decompressobj().decompress(raw)
    return raw


def _handler(server: ModelServer):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # the requests are kept, not printed
            pass

        def _send(self, status: int, ctype: str, payload: bytes, *, close: bool = False) -> None:
            self.send_response(status)
            self.send_header("content-type", ctype)
            if close:
                self.send_header("connection", "close")
                self.close_connection = True
            else:
                self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()

        def do_GET(self) -> None:
            server._keep(Request("other", "GET", self.path, dict(self.headers), {}))
            if self.path.split("?")[0].endswith("/models"):
                self._send(200, "application/json", json.dumps(
                    {"object": "list", "data": [], "models": []}).encode())
            else:
                self._send(404, "application/json", b'{"error": "not found"}')

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            try:
                body = json.loads(_decode(self.headers, raw) or b"{}")
            except ValueError:
                body = {"unreadable": raw[:200].decode("latin-1")}
            path = self.path.split("?")[0]
            api = ("messages" if path.endswith("/messages") else
                   "responses" if path.endswith("/responses") else
                   "gemini" if path.endswith((":generateContent", ":streamGenerateContent")) else
                   "chat" if path.endswith("/chat/completions") else "other")
            req = Request(api, "POST", self.path, dict(self.headers), body)
            if api == "other":
                server._keep(req)
                if path.endswith("/count_tokens"):
                    self._send(200, "application/json", b'{"input_tokens": 100}')
                elif path.endswith(":countTokens"):
                    self._send(200, "application/json", b'{"totalTokens": 100}')
                else:
                    self._send(404, "application/json", b'{"error": "not found"}')
                return
            req.convo = APIS[api].conversation(body)
            status, ctype, payload, hang = server._answer(api, body, req)
            try:
                self._send(status, ctype, payload, close=hang)
                if hang:  # hold the answer open until the agent goes away or the server stops
                    server._closing.wait(300)
            except (BrokenPipeError, ConnectionResetError):
                pass

    return Handler

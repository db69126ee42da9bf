"""A tiny LSP client over stdio (asyncio): Content-Length framing, requests by id, and polite answers
to the server's own requests (progress tokens, capability registration)."""

from __future__ import annotations

import asyncio
import json
import time


class LspClient:
    def __init__(self, proc: asyncio.subprocess.Process):
        self.proc = proc
        self._next = 0
        self._waiting: dict[int, asyncio.Future] = {}
        self._sent: dict[int, float] = {}
        self.notifications: list[tuple[float, str, dict]] = []
        self._reader = asyncio.get_running_loop().create_task(self._read_loop())

    @classmethod
    async def start(cls, argv: list[str], *, cwd=None, env=None) -> "LspClient":
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL, cwd=cwd, env=env, limit=1 << 24)
        return cls(proc)

    def _write(self, msg: dict) -> None:
        body = json.dumps(msg).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def send(self, method: str, params=None) -> tuple[int, asyncio.Future]:
        """Send a request without waiting; returns (id, future of (result, receive time))."""
        self._next += 1
        rid = self._next
        fut = asyncio.get_running_loop().create_future()
        self._waiting[rid] = fut
        self._write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}})
        return rid, fut

    async def request(self, method: str, params=None, timeout: float = 600.0):
        _rid, fut = self.send(method, params)
        await self.proc.stdin.drain()
        result, _t = await asyncio.wait_for(fut, timeout)
        return result

    def notify(self, method: str, params=None) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params or {}})

    async def _read_loop(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = await out.readline()
                if not line:
                    for fut in self._waiting.values():
                        if not fut.done():
                            fut.set_exception(ConnectionError("the server closed its output"))
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            body = json.loads(await out.readexactly(length))
            now = time.perf_counter()
            if "id" in body and ("result" in body or "error" in body) and "method" not in body:
                fut = self._waiting.pop(body["id"], None)
                if fut is not None and not fut.done():
                    if "error" in body:
                        fut.set_exception(RuntimeError(f"{body['error'].get('message')} "
                                                       f"({body['error'].get('data')})"))
                    else:
                        fut.set_result((body["result"], now))
            elif "id" in body and "method" in body:
                self._write({"jsonrpc": "2.0", "id": body["id"], "result": None})
            else:
                self.notifications.append((now, body.get("method", ""), body.get("params")))

    async def initialize(self, root_uri: str, options: dict | None = None) -> dict:
        result = await self.request("initialize", {
            "processId": None, "rootUri": root_uri, "capabilities": {
                "window": {"workDoneProgress": True}},
            "initializationOptions": options or {}})
        self.notify("initialized", {})
        await self.proc.stdin.drain()
        return result

    async def shutdown(self) -> None:
        try:
            await self.request("shutdown", None, timeout=60)
            self.notify("exit", None)
            await self.proc.stdin.drain()
            self.proc.stdin.close()
            await asyncio.wait_for(self.proc.wait(), 30)
        except Exception:
            if self.proc.returncode is None:
                self.proc.kill()
                await self.proc.wait()
        finally:
            self._reader.cancel()

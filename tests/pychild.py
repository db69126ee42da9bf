"""Child Python processes for the fault loops, started by fork from a process that has imported
turnback already.

A crash loop runs its operation in a fresh process at every point it faults (hundreds per loop),
and each `python -c` spent most of its time starting the interpreter and importing turnback
(0.2 s of a 0.3 s child on CI's machine). Here each pytest worker keeps one *parent* process that
imported turnback once and forks a child per request: the child is still a process of its own
(its own pid, its own descriptors, locks and leases released when it ends, `os._exit` at a crash
point is a real death), with the requested environment, arguments, working folder and a fault
plan read from that environment afresh (`fs.install_from_env`), and it ends like `python -c`:
the interpreter's normal exit (atexit, threads joined, streams flushed), status 1 and a traceback
for an uncaught exception. What differs from `python -c` is only what was imported before the code
ran. `TURNBACK_TEST_FRESH_CHILDREN=1` starts every child with `python -c` instead.

A uniquely named module (not conftest.py) so imports never pick up another folder's conftest."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time

# The parent: imports what the children's code imports, then forks one child per request line
# (JSON on fd argv[1]); answers on fd argv[2] with the child's pid, then its exit status. The child
# leaves the loop and runs the code at the top level, so that the interpreter ends it as it ends
# `python -c`.
_PARENT = r"""
import json, os, sys
requests, replies = int(sys.argv[1]), int(sys.argv[2])
import turnback.workbench, turnback.store.fsck, turnback.agents.spool, turnback.collect.collector
from turnback.store import fs

def _line():
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(requests, 65536)
        if not chunk:
            os._exit(0)  # the worker is gone
        data += chunk
    return json.loads(data)

def _say(obj):
    os.write(replies, (json.dumps(obj) + "\n").encode())

while True:
    _req = _line()
    _pid = os.fork()
    if _pid == 0:
        break
    _say({"pid": _pid})
    _say({"status": os.waitstatus_to_exitcode(os.waitpid(_pid, 0)[1])})

os.close(requests)
os.close(replies)
_null = os.open(os.devnull, os.O_RDONLY)
os.dup2(_null, 0)
for _fd, _path in ((1, _req["stdout"]), (2, _req["stderr"])):
    _out = os.open(_path, os.O_WRONLY | os.O_TRUNC)
    os.dup2(_out, _fd)
    os.close(_out)
os.close(_null)
os.chdir(_req["cwd"])
os.environ.clear()
os.environ.update(_req["env"])
sys.argv = ["-c", *_req["args"]]
fs.install_from_env()
_code = compile(_req["code"], "<string>", "exec")
_globals = {"__name__": "__main__", "__builtins__": __builtins__}
del _req, _pid, _null, _fd, _path, _out
exec(_code, _globals)
"""


# What installs a fault plan at import (`fs.install_from_env`): never in the parent, whose imports
# would count (or die at) operations of no child's; each child reads its own.
_FAULT_VARS = ("TURNBACK_CRASH_AT", "TURNBACK_FAIL_AT", "TURNBACK_DISK_FULL_AT",
               "TURNBACK_FAULT_STICKY", "TURNBACK_CRASH_MODEL")


class _Parent:
    def __init__(self):
        req_r, self.req_w = os.pipe()
        self.rep_r, rep_w = os.pipe()
        env = {k: v for k, v in os.environ.items() if k not in _FAULT_VARS}
        self.proc = subprocess.Popen([sys.executable, "-c", _PARENT, str(req_r), str(rep_w)],
                                     pass_fds=(req_r, rep_w), env=env, stdin=subprocess.DEVNULL)
        os.close(req_r)
        os.close(rep_w)
        self.pending = b""

    def _reply(self, deadline: float | None) -> dict | None:
        while b"\n" not in self.pending:
            wait = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([self.rep_r], [], [], wait)
            if not ready:
                return None
            chunk = os.read(self.rep_r, 65536)
            if not chunk:
                raise RuntimeError(f"the test children's parent died (status {self.proc.wait()})")
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return json.loads(line)

    def run(self, code: str, args: list[str], env: dict, cwd: str, timeout: float | None):
        with tempfile.TemporaryDirectory(prefix="tb-child-") as tmp:
            out, err = os.path.join(tmp, "out"), os.path.join(tmp, "err")
            for path in (out, err):
                open(path, "wb").close()
            request = {"code": code, "args": args, "env": env, "cwd": cwd, "stdout": out,
                       "stderr": err}
            os.write(self.req_w, (json.dumps(request) + "\n").encode())
            pid = self._reply(None)["pid"]
            deadline = None if timeout is None else time.monotonic() + timeout
            done = self._reply(deadline)
            if done is None:
                os.kill(pid, signal.SIGKILL)
                self._reply(None)
            stdout, stderr = (_text(path) for path in (out, err))
        cmd = [sys.executable, "-c", code, *args]
        if done is None:
            raise subprocess.TimeoutExpired(cmd, timeout, output=stdout, stderr=stderr)
        return subprocess.CompletedProcess(cmd, done["status"], stdout, stderr)


def _text(path: str) -> str:
    with open(path, "rb") as f:
        return f.read().decode("utf-8", errors="replace")


_parent: _Parent | None = None
_lock = threading.Lock()


def run_python(code: str, *args, env: dict | None = None, cwd: str | os.PathLike | None = None,
               timeout: float | None = 60) -> subprocess.CompletedProcess:
    """`subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=cwd, capture_output=True,
    text=True, timeout=timeout)`, forked from the worker's turnback parent (see the module doc)."""
    global _parent
    args = [str(a) for a in args]
    env = dict(os.environ if env is None else env)
    cwd = str(cwd) if cwd is not None else os.getcwd()
    fresh = os.environ.get("TURNBACK_TEST_FRESH_CHILDREN") == "1" or not hasattr(os, "fork")
    # A second thread of the same worker (a race between two children) gets a process of its own.
    if fresh or not _lock.acquire(blocking=False):
        return subprocess.run([sys.executable, "-c", code, *args], env=env, cwd=cwd,
                              capture_output=True, text=True, timeout=timeout)
    try:
        if _parent is None or _parent.proc.poll() is not None:
            _parent = _Parent()
        return _parent.run(code, args, env, cwd, timeout)
    finally:
        _lock.release()

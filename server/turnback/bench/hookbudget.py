"""`hook-budgets`: how long `turnback hook` takes when its owner cannot answer, beside a live owner's
ordinary event and `python -c pass` measured in the same run (docs/agents/README.md, "Never in
the agent's way"). Each case is a prompt's hook, timed from process start to exit:

* a stopped owner (SIGSTOP): the hook sees it in /proc and keeps the event at once;
* a full listen backlog (an owner that accepts nothing): EAGAIN, tried again for 0.2 s, then kept;
* a held agent lock: the owner waits for it for its lock budget (3 s), then keeps the event;
* a dead owner (SIGKILL): the hook starts a new owner and hands it the event (not at `tiny`);
* an owner that takes connections and never answers: the hook's whole budget (10 s; 1 s at
  `--scale tiny`, said in the figure's note).

The check: every hook exited 0 and printed nothing, and every event was recorded exactly once once
the owner could answer again (the spool replayed in order).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

HOOK = [sys.executable, "-m", "turnback", "hook", "claude-code"]


def _prompt(root: Path, text: str) -> bytes:
    return json.dumps({"session_id": "bench", "transcript_path": None, "cwd": str(root),
                       "hook_event_name": "UserPromptSubmit", "prompt": text}).encode()


def _hook(root: Path, text: str, env: dict) -> tuple[float, bool]:
    start = time.perf_counter()
    proc = subprocess.run(HOOK, input=_prompt(root, text), capture_output=True, cwd=root, env=env)
    return time.perf_counter() - start, proc.returncode == 0 and not proc.stdout and not proc.stderr


def _stop_owner(root: Path) -> None:
    subprocess.run([sys.executable, "-m", "turnback", "daemon", "stop", "--workspace", str(root)],
                   capture_output=True)


def _prompts(root: Path) -> list[str]:
    from ..remote import client

    return [t.get("prompt") for t in client.call(str(root), "turnback/session/log", {})["turns"]]


def _recorded(root: Path, expected: list[str], seconds: float = 30.0) -> tuple[bool, str]:
    """Whether the session's prompts come to be `expected` (and what they are): a kept event is
    recorded when the owner replays its spool, which goes on after the hook that found it has
    returned, so this waits for it (bounded)."""
    deadline = time.monotonic() + seconds
    while True:
        got = _prompts(root)
        if got == expected or time.monotonic() > deadline or len(got) > len(expected):
            return got == expected, f"recorded {got}"
        time.sleep(0.05)


def _workspace(ctx, name: str, env: dict) -> Path:
    from ..remote import client

    root = ctx.dir(name)
    (root / "turnback.toml").write_text("")
    saved = dict(os.environ)
    os.environ.update(env)  # the owner inherits the budgets of this case
    try:
        client.ensure_owner(str(root), str(root / ".turnback"), timeout=60)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return root


def _owner_pid(root: Path) -> int:
    from ..remote import client

    return client.call(str(root), "turnback/session/info", {})["owner"]["pid"]


def run(ctx) -> None:
    n = ctx.pick(2, 5, 10)
    env = dict(os.environ)
    texts_ok: list[bool] = []
    passes = []
    for _ in range(10):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"])
        passes.append(time.perf_counter() - start)
    base = sorted(passes)[len(passes) // 2]
    ctx.fig("python -c pass p50", base, "s")

    root = _workspace(ctx, "live", {})
    try:
        live = [_hook(root, f"live {i}", env) for i in range(n)]
        live_p50 = sorted(t for t, _ in live)[n // 2]
        ctx.fig("live owner p50", live_p50, "s", baseline=base, source="python -c pass")
        texts_ok += [ok for _, ok in live]

        pid = _owner_pid(root)  # stopped: seen in /proc, kept at once
        os.kill(pid, signal.SIGSTOP)
        try:
            stopped = [_hook(root, f"stopped {i}", env) for i in range(n)]
        finally:
            os.kill(pid, signal.SIGCONT)
        _case(ctx, "stopped owner", stopped, live_p50, texts_ok)
        _hook(root, "after the stop", env)  # replays the spool first
        ctx.check("a stopped owner's events recorded once, in order, when it woke",
                  *_recorded(root, [f"live {i}" for i in range(n)]
                            + [f"stopped {i}" for i in range(n)] + ["after the stop"]))

        if ctx.scale != "tiny":  # dead: a new owner is started (seconds) and handed the event
            pid = _owner_pid(root)
            os.kill(pid, signal.SIGKILL)
            dead = [_hook(root, "after the kill", env)]
            _case(ctx, "dead owner (a new one started)", dead, live_p50, texts_ok)
            ctx.check("the event after the kill recorded",
                      _prompts(root)[-1:] == ["after the kill"])
    finally:
        _stop_owner(root)

    lock_budget = ctx.pick("0.3", "3", "3")
    root = _workspace(ctx, "locked", {"TURNBACK_HOOK_LOCK_SECONDS": lock_budget})
    try:
        agents = root / ".turnback" / "agents"
        agents.mkdir(parents=True, exist_ok=True)
        fd = os.open(agents / "lock", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            held = [_hook(root, f"held {i}", env) for i in range(n)]
        finally:
            os.close(fd)
        _case(ctx, "held agent lock", held, live_p50, texts_ok,
              note=f"the owner waits {lock_budget} s for the lock, then keeps the event")
        _hook(root, "after the lock", env)
        ctx.check("events kept while the lock was held recorded once, in order",
                  *_recorded(root, [f"held {i}" for i in range(n)] + ["after the lock"]))
    finally:
        _stop_owner(root)

    _flooded(ctx, n, env, live_p50, texts_ok)
    _silent(ctx, env, live_p50, texts_ok)
    ctx.check("every hook exited 0 and printed nothing", all(texts_ok), f"{texts_ok}")
    ctx.fig("load-average", round(os.getloadavg()[0], 2), None,
            note=f"{os.cpu_count()} cores; these figures are only as quiet as the machine")


def _case(ctx, name: str, times, live_p50: float, texts_ok: list, note: str | None = None) -> None:
    values = sorted(t for t, _ in times)
    texts_ok += [ok for _, ok in times]
    ctx.fig(f"{name} p50", values[len(values) // 2], "s", baseline=live_p50,
            source="live owner p50", note=note)
    ctx.fig(f"{name} max", values[-1], "s", baseline=live_p50, source="live owner p50", note=note)


def _fake_owner(root: Path) -> socket.socket:
    run = root / ".turnback" / "run"
    run.mkdir(parents=True, mode=0o700, exist_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(run / "owner.sock"))
    os.chmod(run / "owner.sock", 0o600)
    return sock


def _flooded(ctx, n: int, env: dict, live_p50: float, texts_ok: list) -> None:
    root = ctx.dir("flooded")
    (root / "turnback.toml").write_text("")
    listener = _fake_owner(root)
    listener.listen(0)
    waiting = []
    try:
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.setblocking(False)
            try:
                s.connect(listener.getsockname())
            except BlockingIOError:
                s.close()
                break
            waiting.append(s)
        flooded = [_hook(root, f"flooded {i}", env) for i in range(n)]
    finally:
        for s in waiting:
            s.close()
        listener.close()
        os.unlink(root / ".turnback" / "run" / "owner.sock")
    _case(ctx, "full listen backlog", flooded, live_p50, texts_ok)
    from ..remote import client

    client.ensure_owner(str(root), str(root / ".turnback"), timeout=60)
    try:
        _hook(root, "after the flood", env)
        ctx.check("events kept during the flood recorded once, in order",
                  *_recorded(root, [f"flooded {i}" for i in range(n)] + ["after the flood"]))
    finally:
        _stop_owner(root)


def _silent(ctx, env: dict, live_p50: float, texts_ok: list) -> None:
    """An owner that takes the connection and never answers: the hook's whole budget."""
    root = ctx.dir("silent")
    (root / "turnback.toml").write_text("")
    listener = _fake_owner(root)
    listener.listen(8)
    budget = ctx.pick("1", "10", "10")
    try:
        silent = [_hook(root, "unanswered", {**env, "TURNBACK_HOOK_SECONDS": budget})]
    finally:
        listener.close()
        os.unlink(root / ".turnback" / "run" / "owner.sock")
    _case(ctx, "owner that never answers", silent, live_p50, texts_ok,
          note=f"the hook's whole budget: {budget} s")

"""`[hooks] after-rewind`: a command run after every committed rewind, restore, Redo or fork.

The workbench announces each commit (`rewound`, the same document `turnback/rewound` sends to every
client); the process that committed it runs the command from the configuration in force then
(turnback.toml, then the store's config.toml), in the workspace folder, through the shell, with the
document as JSON on standard input:

    {"operation": "rewind" | "restore" | "redo" | "fork", "mode": "all" | "files" | "conversation",
     "boundary": Boundary or null, "files": [path relative to the workspace], "turnCount": N,
     "sessionId": "…", "agentResume"?: {…}, "workspace": "/abs/path", …}

It is bounded in time (`after-rewind-timeout`, 10 s by default: then its whole process group is
killed), it never undoes the commit, and whatever it does (exit status, the tail of its output, a
timeout, a failure to start) is one line in the hook log (`.turnback/agents/hook.log`). In a server it
runs on a thread of its own, never on the event loop; the command line waits for it, since it exits
next.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

from ..agents.agentrecord import AgentRecord

TAIL = 600  # characters of the command's output kept in the log line


def attach(wb, *, background: bool) -> None:
    """Run the after-rewind command for every commit `wb` announces."""
    root, store = Path(wb.root), Path(wb.store.path)
    uri_to_rel = wb.ws.to_rel

    def on_event(name: str, doc: dict) -> None:
        if name != "rewound":
            return
        document = dict(doc, files=[uri_to_rel(u) for u in doc.get("files", ())],
                        workspace=str(root))
        if background:
            threading.Thread(target=run, args=(root, store, document), daemon=True,
                             name="turnback-after-rewind").start()
        else:
            run(root, store, document)

    wb.events.subscribe(on_event)


def run(root: Path, store: Path, document: dict) -> dict | None:
    """Run the configured command once; returns what happened (None when none is configured)."""
    from .config import load

    record = AgentRecord(store)
    try:
        config = load(root, store)
    except Exception as exc:  # noqa: BLE001 - a hook of ours is never in the way either
        record.log(f"after-rewind: the configuration could not be read ({exc})")
        return None
    for problem in config.problems:  # an untrusted file's command is never run: say why here
        record.log(f"after-rewind: {problem}")
    command = config.after_rewind
    if not command:
        return None
    what = f"after-rewind {document.get('operation')} ({document.get('mode')})"
    outcome = execute(command, root, document, config.after_rewind_timeout)
    if outcome["status"] == "ok":
        record.log(f"{what}: {command!r} exited 0 in {outcome['seconds']:.2f} s")
    else:
        record.log(f"{what}: {command!r} {outcome['detail']}; the {document.get('operation')} "
                   f"stays committed" + (f"; output: {outcome['output']!r}" if outcome["output"] else ""))
    return outcome


def execute(command: str, root: Path, document: dict, timeout: float) -> dict:
    """The command with `document` on stdin, in its own process group, killed whole at `timeout`."""
    env = dict(os.environ, TURNBACK_WORKSPACE=str(root),
               TURNBACK_OPERATION=str(document.get("operation")),
               TURNBACK_MODE=str(document.get("mode")),
               TURNBACK_TURN_COUNT=str(document.get("turnCount")))
    started = time.monotonic()
    try:
        proc = subprocess.Popen(command, shell=True, cwd=root, env=env, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
    except OSError as exc:
        return {"status": "failed", "detail": f"could not start ({exc})", "output": "",
                "seconds": 0.0}
    body = json.dumps(document, ensure_ascii=False).encode("utf-8")
    try:
        out, _ = proc.communicate(body, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, _ = proc.communicate()
        return {"status": "timeout", "detail": f"was stopped after {timeout:g} s",
                "output": _tail(out), "seconds": time.monotonic() - started}
    seconds = time.monotonic() - started
    if proc.returncode != 0:
        return {"status": "failed", "detail": f"exited {proc.returncode}", "output": _tail(out),
                "seconds": seconds}
    return {"status": "ok", "detail": "exited 0", "output": _tail(out), "seconds": seconds}


def _kill_group(proc) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the shell and everything it started
    except (ProcessLookupError, PermissionError):
        proc.kill()


def _tail(out: bytes | None) -> str:
    text = (out or b"").decode("utf-8", "replace").strip()
    return text if len(text) <= TAIL else "…" + text[-TAIL:]

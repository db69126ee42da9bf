"""Whether Codex will run the hooks `hooks install codex` wrote, and recording the trust it needs.

Codex 0.169 runs a command hook only when two things hold (measured with the real binary):

1. its config layer is loaded. A project's `.codex/hooks.json` is read only in a trusted project:
   `[projects."ROOT"] trust_level = "trusted"` in `$CODEX_HOME/config.toml` (what `codex exec --trust`
   or the folder-trust question of `codex` records). Untrusted, the whole `.codex/` layer is skipped
   in silence; `codex exec` does not say so.
2. a person trusted that hook's exact definition: `[hooks.state."KEY"] trusted_hash = "sha256:…"`,
   KEY being `HOOKS_FILE:event_name:GROUP:HANDLER`. A new or changed hook is skipped until then
   (`/hooks` in the `codex` terminal UI reviews them; `--dangerously-bypass-hook-trust` skips the check
   for one run).

Codex's own app-server (`codex app-server`, JSON-RPC over stdio) is the authority on both:
`config/read` names the project layer and why it is disabled, `hooks/list` gives every hook its key,
`currentHash` and `trustStatus`, and `config/batchWrite` is how Codex's own UI records trust. turnback
goes through it and never computes a hash itself (the hashing is Codex's and changes with it). When no
`codex` can be run, the status reads `config.toml` and says it could not verify the hashes.
"""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

from ..errors import InvalidParams

TIMEOUT_S = 30


class CodexUnavailable(Exception):
    pass


def codex_program() -> str | None:
    """The `codex` to ask: `TURNBACK_CODEX`, else the one on PATH."""
    return os.environ.get("TURNBACK_CODEX") or shutil.which("codex")


def codex_home() -> Path:
    return Path(os.path.expanduser(os.environ.get("CODEX_HOME") or "~/.codex"))


class AppServer:
    """One `codex app-server` child, spoken to line by line. Notifications that arrive while a
    call waits are kept (`notifications`), for a caller that drives turns (the real-agent tests)."""

    def __init__(self, program: str, cwd: Path, env: dict | None = None):
        try:
            self._proc = subprocess.Popen([program, "app-server"], cwd=cwd, text=True, env=env,
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.DEVNULL)
        except OSError as exc:
            raise CodexUnavailable(f"cannot run {program}: {exc}") from exc
        self._lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self._next = 0
        self.notifications: list[dict] = []
        self.version = self.call("initialize", {"clientInfo": {"name": "turnback",
                                                               "version": "1"}}).get("userAgent")
        self._send({"jsonrpc": "2.0", "method": "initialized"})

    def _read(self) -> None:
        for line in self._proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _send(self, message: dict) -> None:
        try:
            self._proc.stdin.write(json.dumps(message) + "\n")
            self._proc.stdin.flush()
        except OSError as exc:
            raise CodexUnavailable(f"codex app-server went away: {exc}") from exc

    def _next_message(self, deadline: float, what: str) -> dict | None:
        try:
            line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise CodexUnavailable(f"codex app-server did not answer {what} in time")
        if line is None:
            raise CodexUnavailable(f"codex app-server exited before answering {what}")
        try:
            message = json.loads(line)
        except ValueError:
            return None
        return message if isinstance(message, dict) else None

    def call(self, method: str, params: dict, timeout: float = TIMEOUT_S) -> dict:
        self._next += 1
        ident = self._next
        self._send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            message = self._next_message(deadline, method)
            if message is None:
                continue
            if message.get("id") != ident:
                if "method" in message and "id" not in message:
                    self.notifications.append(message)
                continue
            if "error" in message:
                raise CodexUnavailable(f"codex app-server refused {method}: {message['error']}")
            return message.get("result") or {}

    def wait_for(self, predicate, start: int = 0, timeout: float = 180) -> int:
        """The index in `notifications` of the first one from `start` on that satisfies
        `predicate`, reading on until it comes."""
        deadline = time.monotonic() + timeout
        while True:
            for i in range(start, len(self.notifications)):
                if predicate(self.notifications[i]):
                    return i
            start = len(self.notifications)
            message = self._next_message(deadline, "the awaited notification")
            if message is not None and "method" in message and "id" not in message:
                self.notifications.append(message)

    def close(self) -> None:
        try:
            self._proc.stdin.close()
            self._proc.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            self._proc.kill()
            self._proc.wait()

    def __enter__(self) -> "AppServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def snake(event: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", event).lower()


def _ours(hook: dict, hooks_file: Path, is_ours) -> bool:
    source = hook.get("sourcePath")
    return bool(source) and os.path.realpath(source) == os.path.realpath(hooks_file) \
        and is_ours(hook.get("command") or "")


def _ask(server: AppServer, root: Path, hooks_file: Path, scope: str, is_ours) -> dict:
    layers = server.call("config/read", {"cwd": str(root), "includeLayers": True}).get("layers") or []
    project = next((l for l in layers if (l.get("name") or {}).get("type") == "project"), None)
    disabled = project.get("disabledReason") if project else None
    listed = server.call("hooks/list", {"cwds": [str(root)]}).get("data") or []
    hooks = [{"key": h["key"], "event": h.get("eventName"), "trustStatus": h.get("trustStatus"),
              "currentHash": h.get("currentHash"), "enabled": h.get("enabled", True)}
             for entry in listed for h in entry.get("hooks") or [] if _ours(h, hooks_file, is_ours)]
    return {"checkedWith": server.version or "codex app-server",
            "projectTrusted": (disabled is None and project is not None) if scope == "project" else None,
            "projectDisabledReason": disabled if scope == "project" else None, "hooks": hooks}


def _read_config(root: Path, hooks_file: Path, scope: str, events: list[str]) -> dict:
    """Without a `codex` to ask: what `config.toml` records (the hashes cannot be checked)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    path = codex_home() / "config.toml"
    try:
        config = tomllib.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        config = {}
    except (OSError, ValueError) as exc:
        return {"checkedWith": None, "problem": f"{path} is unreadable: {exc}", "hooks": []}
    projects = config.get("projects") if isinstance(config.get("projects"), dict) else {}
    trusted = any(isinstance(v, dict) and v.get("trust_level") == "trusted"
                  and (root == Path(k) or Path(k) in root.parents) for k, v in projects.items())
    state = (config.get("hooks") or {}).get("state") if isinstance(config.get("hooks"), dict) else {}
    state = state if isinstance(state, dict) else {}
    hooks = []
    for event in events:
        recorded = [k for k, v in state.items() if k.startswith(f"{hooks_file}:{snake(event)}:")
                    and isinstance(v, dict) and v.get("trusted_hash")]
        hooks.append({"key": f"{hooks_file}:{snake(event)}", "event": event,
                      "trustStatus": "trusted" if recorded else "untrusted"})
    return {"checkedWith": None, "projectTrusted": trusted if scope == "project" else None,
            "projectDisabledReason": None, "hooks": hooks}


def check(root: Path, hooks_file: Path, scope: str, events: list[str], is_ours) -> dict:
    """What stands between the installed hooks and Codex running them: `blocked` (the reason, or
    None) and `step` (what to do about it)."""
    program = codex_program()
    found = None
    if program:
        try:
            with AppServer(program, root) as server:
                found = _ask(server, root, hooks_file, scope, is_ours)
        except CodexUnavailable as exc:
            found = {**_read_config(root, hooks_file, scope, events), "codexProblem": str(exc)}
    if found is None:
        found = _read_config(root, hooks_file, scope, events)
    return {**found, **_verdict(found, scope, len(events))}


def _verdict(found: dict, scope: str, expected: int) -> dict:
    fix = "turnback hooks install codex --trust" + (" --user" if scope == "user" else "")
    if found.get("problem"):
        return {"blocked": found["problem"], "step": None}
    if scope == "project" and found.get("projectTrusted") is False:
        why = found.get("projectDisabledReason") or "the project is not a trusted project in " \
            f"{codex_home() / 'config.toml'}"
        return {"blocked": f"Codex does not load this project's .codex/ folder: {why}",
                "step": f"run `{fix}`, or `codex exec --trust` here and then review the hooks "
                        "with /hooks in codex"}
    hooks = found.get("hooks") or []
    waiting = [h for h in hooks if h.get("trustStatus") in ("untrusted", "modified")]
    off = [h for h in hooks if h.get("enabled") is False]
    if found.get("checkedWith") and len(hooks) < expected:
        return {"blocked": f"Codex lists {len(hooks)} of turnback's {expected} hooks",
                "step": "check the hooks file with /hooks in codex"}
    if waiting:
        states = sorted({h["trustStatus"] for h in waiting})
        return {"blocked": f"{len(waiting)} of turnback's hooks are {' or '.join(states)}: Codex runs "
                           "a hook only after a person trusted its exact definition",
                "step": f"run `{fix}`, or review and trust them with /hooks in codex"}
    if off:
        return {"blocked": f"{len(off)} of turnback's hooks are turned off in Codex",
                "step": "turn them on with /hooks in codex"}
    return {"blocked": None, "step": None}


def trust(root: Path, hooks_file: Path, scope: str, events: list[str], is_ours) -> dict:
    """Record, through Codex's own app-server, what Codex needs to run turnback's hooks: the project
    as trusted (project installs) and each of turnback's hooks at the hash Codex reports. Only
    turnback's own hooks are trusted; then Codex is asked again and the answer returned."""
    program = codex_program()
    if not program:
        raise InvalidParams("--trust needs Codex: no `codex` on PATH (or set TURNBACK_CODEX to it)")
    try:
        with AppServer(program, root) as server:
            found = _ask(server, root, hooks_file, scope, is_ours)
            project_written = scope == "project" and not found["projectTrusted"]
            if project_written:
                server.call("config/value/write", {"keyPath": f"projects.{_quote(str(root))}"
                                                              ".trust_level",
                                                   "value": "trusted", "mergeStrategy": "upsert"})
        with AppServer(program, root) as server:  # a fresh one reads the new project layer
            found = _ask(server, root, hooks_file, scope, is_ours)
            edits = [{"keyPath": f"hooks.state.{_quote(h['key'])}.trusted_hash",
                      "value": h["currentHash"], "mergeStrategy": "upsert"}
                     for h in found["hooks"] if h["trustStatus"] in ("untrusted", "modified")]
            if edits:
                server.call("config/batchWrite", {"edits": edits})
            found = _ask(server, root, hooks_file, scope, is_ours)
    except CodexUnavailable as exc:
        raise InvalidParams(f"could not record Codex's trust: {exc}") from exc
    return {**found, "trusted": len(edits), "projectTrustWritten": project_written,
            **_verdict(found, scope, len(events))}


def _quote(key: str) -> str:
    return json.dumps(key)

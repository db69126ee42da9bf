"""The workspace the real-editor suite opens: a three-turn session recorded with the real `turnback`
command line, as an agent's hooks would record it (turn begin, capture before and after each write,
steps with their scope, respond, settle).

The command line has no directive command, so the one directive is anchored and its attempt recorded
through the workbench, the same core API the server and the command line call.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

APP_V0 = 'def greet(name):\n    return "hi " + name\n'
APP_V1 = 'def greet(name):\n    return f"Hello, {name}!"\n'
APP_V3 = APP_V1 + '\n\ndef farewell(name):\n    return f"Goodbye, {name}."\n'
UTIL_V0 = 'def slugify(text):\n    return text.lower().replace(" ", "-")\n'
UTIL_V2 = ('def slugify(text):\n    """Lower-case, spaces to dashes."""\n'
           '    return text.lower().replace(" ", "-")\n')
FAREWELL = "Goodbye notes: say it kindly.\n"

PROMPTS = ["Make the greeting friendlier", "Document slugify", "Add a farewell and announce it"]


class Cli:
    """`turnback --workspace ROOT ...`, failing loudly with the command's own words."""

    def __init__(self, turnback: str, root: Path):
        self.turnback, self.root = turnback, root

    def __call__(self, *args: str, json_out: bool = False):
        argv = [self.turnback, "--workspace", str(self.root), *(["--json"] if json_out else []), *args]
        done = subprocess.run(argv, cwd=self.root, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
        return json.loads(done.stdout) if json_out else done.stdout.strip()


def agent_writes(cli: Cli, root: Path, rel: str, text: str, summary: str) -> None:
    """What an agent's pre/post tool hooks do around one file write."""
    cli("turn", "capture", "--phase", "before", rel)
    (root / rel).write_text(text)
    cli("turn", "capture", rel)
    cli("turn", "step", "--kind", "file-write", "--scope", "host", "--summary", summary, "--path", rel)


def anchor_directive(root: Path, rel: str, line: int, request: str) -> str:
    from turnback.workbench import Options, Workbench

    wb = Workbench.open(root, Options(store_kind="heads"), take_ownership=True)
    try:
        d = wb.directives.upsert({"uri": (root / rel).as_uri(), "anchor": {"line": line, "character": 0},
                                  "request": request})
        return d["id"]
    finally:
        wb.close()


def record_attempt(root: Path, directive_id: str, turn: int, answer: str) -> None:
    from turnback.workbench import Options, Workbench

    wb = Workbench.open(root, Options(store_kind="heads"), take_ownership=True)
    try:
        wb.directives.record({"directiveId": directive_id, "turn": turn, "answer": answer})
    finally:
        wb.close()


def make_workspace(root: Path, turnback: str) -> dict:
    """Three settled turns; turn 3 has a step of unknown scope (a gap) and a send that left the
    machine (an effect). Returns what the suite checks against."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "app.py").write_text(APP_V0)
    (root / "util.py").write_text(UTIL_V0)
    cli = Cli(turnback, root)

    cli("turn", "begin", "--prompt", PROMPTS[0])
    agent_writes(cli, root, "app.py", APP_V1, "friendlier greeting")
    cli("turn", "respond", "--final", "The greeting now says hello with a smile.")
    cli("turn", "settle")

    directive = anchor_directive(root, "util.py", 0, "Document slugify")
    turn = int(cli("turn", "begin", "--directive", directive, "--prompt", PROMPTS[1]))
    agent_writes(cli, root, "util.py", UTIL_V2, "docstring for slugify")
    cli("turn", "respond", "--final", "Documented slugify.")
    cli("turn", "settle")
    record_attempt(root, directive, turn, "Added a one-line docstring.")

    cli("turn", "begin", "--prompt", PROMPTS[2])
    agent_writes(cli, root, "app.py", APP_V3, "farewell()")
    agent_writes(cli, root, "farewell.md", FAREWELL, "farewell notes")
    cli("turn", "step", "--kind", "network-send", "--scope", "crossing", "--summary", "posted to the team chat")
    cli("turn", "step", "--kind", "shell", "--summary", "ran a formatter")  # no scope: a gap
    cli("turn", "respond", "--final", "Added farewell() and told the team.")
    cli("turn", "settle")

    return {"directive": directive, "directiveState": directive_state(root, directive),
            "info": cli("info", json_out=True), "log": cli("log", json_out=True)}


def directive_state(root: Path, directive_id: str) -> str:
    from turnback.workbench import Options, Workbench

    wb = Workbench.open(root, Options(store_kind="heads"), take_ownership=False)
    try:
        return next(d["state"] for d in wb.directives.list({})["directives"] if d["id"] == directive_id)
    finally:
        wb.close()


def image_bytes(root: Path, digest: str) -> bytes:
    """The stored image with that digest, read from the store without taking ownership."""
    from turnback.workbench import Options, Workbench

    wb = Workbench.open(root, Options(store_kind="heads"), take_ownership=False)
    try:
        return wb.store.objects.get(digest)
    finally:
        wb.close()

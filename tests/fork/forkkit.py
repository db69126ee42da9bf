"""Shared builders for the fork tests: a session whose tail has every kind of step worth naming."""

from __future__ import annotations

import subprocess
import sys

from sessionkit import Agent


def file_turn(a: Agent, prompt: str, files: dict, *, steps=()) -> int:
    """One turn: write the files (with a host file-write step each) and log the extra steps."""
    n = a.begin(prompt)
    for rel, data in files.items():
        if data is None:
            a.delete(rel)
        else:
            a.write(rel, data)
        a.step(kind="file-write", scope="host", uris=[a.uri(rel)], summary=f"edit {rel}")
    ids = [a.step(**s) for s in steps]
    a.wb.turns.respond({"turn": n, "text": f"answer {n}", "final": True})
    a.settle()
    return ids


def three_turns(a: Agent) -> dict:
    """Turn 1 edits a.txt; turn 2 edits a.txt and b.txt, sends an email (crossing), holds another and
    compensates a third; turn 3 deletes a.txt."""
    (a.root / "a.txt").write_text("a0")
    file_turn(a, "one", {"a.txt": "a1"})
    sent, held, charge = file_turn(a, "two", {"a.txt": "a2", "b.txt": "b2"}, steps=[
        {"kind": "network-send", "scope": "crossing", "summary": "email the team"},
        {"kind": "network-send", "scope": "crossing", "summary": "queued reply", "held": True},
        {"kind": "network-send", "scope": "crossing", "summary": "charge card",
         "inverse": {"kind": "refund", "scope": "crossing"}},
    ])
    refund = file_turn(a, "three", {"a.txt": None}, steps=[
        {"kind": "network-send", "scope": "crossing", "summary": "refund", "compensates": charge}])
    return {"sent": sent, "held": held, "charge": charge, "refund": refund[0]}


def fork(a: Agent, turn: int, **extra) -> dict:
    report = a.wb.fork.prepare({"turn": turn})
    return a.wb.fork.confirm({"turn": turn, "planHash": report["hash"], **extra})


def command_line(a: Agent):
    """Close the agent's workbench and return `run(*args, input=None)`: `turnback` on its workspace."""
    a.wb.close()
    tb = [sys.executable, "-m", "turnback", "--workspace", str(a.root)]

    def run(*args: str, input: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(tb + list(args), capture_output=True, text=True, timeout=120,
                              input=input)
    return run

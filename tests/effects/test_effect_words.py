"""Effects in plain words (issue 26 §4): a shell step's write inside the workspace is put back with the
files, not "already left this machine" (the scope table, the sweep and the partition agree); each step
is shown by what it did; buckets by people's names, only when they hold a step."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "hooks"))

from test_bad_input import claude, ws  # noqa: E402,F401  (the hook's workspace fixture)
from test_bad_input import hook as hook_run  # noqa: E402

from turnback.cli.render import Renderer
from turnback.effects.words import BUCKET_WORDS, describe, shown_buckets, step_words
from turnback.model.steps import Step


def hook(ws, event: str, **fields) -> None:
    assert hook_run("claude-code", claude(ws, event, **fields))[0] == 0


def bash(ws, tid: str, command: str, effect=None) -> None:
    hook(ws, "PreToolUse", tool_name="Bash", tool_input={"command": command}, tool_use_id=tid)
    if effect:
        effect()
    hook(ws, "PostToolUse", tool_name="Bash", tool_input={"command": command}, tool_use_id=tid,
         tool_response={"stdout": ""})


def test_a_shell_write_into_the_workspace_is_put_back_not_left_the_machine(ws):
    from sessionkit import Agent

    hook(ws, "UserPromptSubmit", prompt="release 1.1")
    bash(ws, "t1", "printf '## 1.1\\n' > CHANGELOG.md",
         lambda: (ws / "CHANGELOG.md").write_text("## 1.1\n"))
    bash(ws, "t2", "git push origin main")
    hook(ws, "Stop", last_assistant_message="released")
    a = Agent(ws)
    try:
        c = a.wb.rewind.prepare({"boundary": {"kind": "beforePrompt", "turn": 1}})
    finally:
        a.close()
    files = {f["path"]: f["action"] for f in c["files"]}
    assert files["CHANGELOG.md"] == "delete"
    printf, push = c["steps"]
    assert printf["bucket"] == "restored" and printf["paths"] == ["CHANGELOG.md"]
    assert printf["what"] == "ran \u201cprintf '## 1.1\\n' > CHANGELOG.md\u201d"
    assert push["bucket"] == "crossedUncompensated" and push["what"] == "ran \u201cgit push origin main\u201d"
    assert c["effects"]["restored"] == [printf["id"]]
    text = "\n".join(Renderer().effect_lines(c, None, "What the discarded steps did:"))
    assert "Put back by this rewind:\n    ran \u201cprintf" in text
    assert "Already left this machine; nothing undoes them:\n    ran \u201cgit push origin main\u201d" in text
    assert "Had no effect" not in text and "provablyEmpty" not in text and "none" not in text


def test_a_shell_write_with_a_gap_in_its_turn_is_not_claimed_restored(ws):
    from sessionkit import Agent

    (ws / "turnback.toml").write_text("")
    hook(ws, "UserPromptSubmit", prompt="write a lot")
    bash(ws, "t1", "cat app.py > copy.py", lambda: (ws / "copy.py").write_text("v = 1\n"))
    a = Agent(ws, max_file_bytes=16)
    try:
        (ws / "big.bin").write_bytes(b"x" * 64)  # the settle sweep cannot capture it
        a.settle()
        c = a.wb.rewind.prepare({"boundary": {"kind": "beforePrompt", "turn": 1}})
    finally:
        a.close()
    assert any(g["reason"] == "too-large" for g in c["gaps"])
    assert c["steps"][0]["bucket"] == "unrestored"  # we cannot say all it did is put back


def test_step_words():
    def s(kind, summary="", rels=()):
        return Step("s1.1", 1, kind, "host", summary, list(rels))
    assert step_words(s("shell", "Bash: npm publish [scope crossing: 'npm publish' -> crossing "
                                 "(default)]")) == "ran \u201cnpm publish\u201d"
    assert step_words(s("shell", "make fmt")) == "ran \u201cmake fmt\u201d"
    assert step_words(s("shell")) == "ran a shell command (not recorded)"
    assert step_words(s("file-write", "Edit src/app.py")) == "Edit src/app.py"
    assert step_words(s("file-delete", rels=["old.py"])) == "file delete old.py"
    buckets = {"restored": ["s1.1"], "crossedUncompensated": [], "unrestored": ["s1.2"]}
    assert shown_buckets(buckets) == [("restored", BUCKET_WORDS["restored"], ["s1.1"]),
                                      ("unrestored", BUCKET_WORDS["unrestored"], ["s1.2"])]
    assert describe([s("shell", "make fmt")], buckets)[0]["bucket"] == "restored"

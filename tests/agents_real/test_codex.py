"""The real Codex CLI (npm @openai/codex 0.169.0) with turnback's hooks installed by `turnback hooks
install codex`, driven through scripted turns (`codex exec`, then `codex exec resume`) by a model
server on loopback speaking the OpenAI Responses API.

What must hold: Codex runs the hooks only once its trust is recorded, and `hooks status` says so
until then, with the step that fixes it (docs/agents/codex.md, followed here literally); Codex's own
output has no hook error; turnback's log has every turn; a rewind puts back every file (apply_patch's
and the shell's) and Redo brings them back; the next prompt after a rewind carries turnback's notice;
an interrupted run can be rewound at once."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
from pathlib import Path

from realkit import (files, hook_log, prompts_seen, rewind_all_redo_rewind_to_2, seed, tb,
                      tb_json, told)

from turnback.bench.mockmodel import Reply, call, say, tools

START = {"app.py": "def greet():\n    return 'hi'\n", "old.txt": "old\n"}
PATCH = ("*** Begin Patch\n*** Add File: notes.txt\n+one\n*** Update File: app.py\n@@\n"
         " def greet():\n-    return 'hi'\n+    return 'hello'\n*** End Patch\n")
T1, T2, T3, T4 = "T1 patch two files", "T2 shell edits", "T3 a failing command", "T4 ask a helper"
HELPER = "H1 the helper writes its file"


def git_repo(root):
    """Codex finds a project by its .git, as it would in a person's checkout."""
    subprocess.run(["git", "init", "-q", str(root)], check=True)


def hook_errors(run) -> list[dict]:
    """Every error Codex puts in a run's output (`codex exec --json`): an error item, or an error
    event of the stream, whatever it is about (a clamped hook timeout is one)."""
    return [d for d in run.events("error")] + [
        d["item"] for d in run.events("item.completed") if d.get("item", {}).get("type") == "error"]


def script(model, root):
    model.script.add(T1, [tools(call("apply_patch", freeform=True, input=PATCH)), say("T1 done")])
    model.script.add(T2, [tools(call("exec_command", cmd="printf 'two\\n' >> notes.txt && "
                                     "echo made > made.txt && rm old.txt")), say("T2 done")])
    model.script.add(T3, [tools(call("exec_command", cmd="echo partial > partial.txt; "
                                     "cat missing.txt")), say("T3 done")])
    model.script.add(T4, [tools(call("spawn_agent", namespace="collaboration", task_name="helper",
                                     fork_turns="none", message=HELPER),
                                call("wait_agent", namespace="collaboration", timeout_ms=30000)),
                          say("T4 done")])
    model.script.add(HELPER, [tools(call("exec_command", cmd="echo helper > helper.txt")),
                              say("helper done")])


def codex_row(codex, scope="project") -> dict:
    rows = tb_json(codex, "hooks", "status")["agents"]
    return next(r for r in rows if r["agent"] == "codex" and r["scope"] == scope)


def documented_steps() -> list[list[str]]:
    """The commands docs/agents/codex.md gives, as written (its `sh` block of steps)."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "agents" / "codex.md").read_text()
    block = text.split("The steps, in the project folder", 1)[1].split("```sh\n", 1)[1]
    block = block.split("```", 1)[0]
    return [shlex.split(line.split("#", 1)[0]) for line in block.splitlines() if line.strip()]


def test_codex_runs_the_hooks_only_after_the_documented_steps(codex, model):
    """docs/agents/codex.md, followed literally: `hooks install codex` alone leaves Codex silent and
    `hooks status` says why (an untrusted project, then unreviewed hooks); `hooks install codex
    --trust` makes it record; a hook changed afterwards is reported again."""
    root = codex.root
    git_repo(root)
    seed(root, START)
    for prompt in ("T1 before trust", "T2 project trusted", "T3 after trust"):
        model.script.add(prompt, [say(f"answer to {prompt}")])
    steps = documented_steps()
    assert steps == [["turnback", "hooks", "install", "codex"],
                     ["turnback", "hooks", "install", "codex", "--trust"],
                     ["turnback", "hooks", "status"]], steps

    out = tb(codex, *steps[0][1:]).stdout
    assert "installed but Codex will not run it" in out and "--trust" in out, out
    row = codex_row(codex)
    assert row["complete"] and "trusted project" in (row["codex"]["blocked"] or ""), row
    assert "installed but Codex will not run it" in tb(codex, "hooks", "status").stdout
    run = codex.exec("T1 before trust")
    assert run.returncode == 0, run.stderr
    assert tb_json(codex, "log")["turns"] == [], "Codex ran turnback's hooks in an untrusted project"

    # the project trusted by Codex's own switch, the hooks not yet reviewed: still silent, and said
    run = codex.exec("T2 project trusted", extra=("--trust",))
    assert run.returncode == 0, run.stderr
    assert tb_json(codex, "log")["turns"] == [], "Codex ran hooks nobody reviewed"
    row = codex_row(codex)
    assert "untrusted" in (row["codex"]["blocked"] or ""), row["codex"]
    assert "/hooks" in row["codex"]["step"]

    out = tb(codex, *steps[1][1:]).stdout
    assert "recorded through codex itself" in out, out
    status = tb(codex, *steps[2][1:]).stdout
    assert "will not run it" not in status, status
    row = codex_row(codex)
    assert row["codex"]["blocked"] is None, row["codex"]
    assert {h["trustStatus"] for h in row["codex"]["hooks"]} == {"trusted"}
    assert len(row["codex"]["hooks"]) == len(row["events"])

    run = codex.exec("T3 after trust")
    assert run.returncode == 0, run.stderr
    assert not hook_errors(run), hook_errors(run)
    log = tb_json(codex, "log")
    assert [t["prompt"] for t in log["turns"]] == ["T3 after trust"], hook_log(root)
    assert log["turns"][0]["response"] == "answer to T3 after trust"

    # a hook changed after it was trusted is one Codex skips again: status says so
    hooks_file = root / ".codex" / "hooks.json"
    data = json.loads(hooks_file.read_text())
    data["hooks"]["Stop"][0]["hooks"][0]["timeout"] = 29
    hooks_file.write_text(json.dumps(data))
    row = codex_row(codex)
    assert "modified" in (row["codex"]["blocked"] or ""), row["codex"]


def test_codex_session_logged_rewound_redone_and_told(codex, model):
    root = codex.root
    git_repo(root)
    seed(root, START)
    script(model, root)
    tb(codex, "hooks", "install", "codex", "--trust")
    states, thread = [files(root)], None
    for prompt in (T1, T2, T3, T4):
        run = codex.exec(prompt, resume=thread)
        assert run.returncode == 0, run.stderr
        assert not hook_errors(run), hook_errors(run)
        thread = thread or codex.thread_id(run)
        states.append(files(root))
    assert states[-1] == {"app.py": "def greet():\n    return 'hello'\n", "notes.txt": "one\ntwo\n",
                          "made.txt": "made\n", "partial.txt": "partial\n",
                          "helper.txt": "helper\n"}
    log = tb_json(codex, "log")
    turns = log["turns"]
    assert [t["prompt"] for t in turns] == [T1, T2, T3, T4], hook_log(root)
    assert [t["response"] for t in turns] == ["T1 done", "T2 done", "T3 done", "T4 done"]
    assert [t["state"] for t in turns] == ["settled"] * 4
    assert [(s["kind"], s["scope"]) for s in turns[0]["stepList"]] == [("file-write", "host")]
    assert {f["path"] for f in turns[0]["files"]} == {"notes.txt", "app.py"}
    assert {f["path"] for f in turns[1]["files"]} == {"notes.txt", "made.txt", "old.txt"}
    assert "helper.txt" in {f["path"] for f in turns[3]["files"]}
    assert "Traceback" not in hook_log(root)

    rewind_all_redo_rewind_to_2(codex, states)

    # the next prompt of the same thread: the model is told what turnback did
    T5 = "T5 carry on after the rewind"
    model.script.add(T5, [say("T5 done")])
    run = codex.exec(T5, resume=thread)
    assert run.returncode == 0, run.stderr
    first = prompts_seen(model, T5)[0]
    assert told(first, 2), [(i.role, i.text[:80]) for i in first.convo][-5:]
    assert [t["prompt"] for t in tb_json(codex, "log")["turns"]] == [T1, T2, T5]


def test_an_interrupted_codex_run_can_be_rewound_at_once(codex, model):
    """Codex is stopped while the model is still answering turn 2, by SIGINT, then by SIGKILL:
    each time a rewind right after works and puts back what the turn had written."""
    root = codex.root
    git_repo(root)
    seed(root, START)
    model.script.add(T1, [tools(call("exec_command", cmd="echo one > notes.txt")), say("T1 done")])
    tb(codex, "hooks", "install", "codex", "--trust")
    first = codex.exec(T1)
    assert first.returncode == 0, first.stderr
    after_t1 = files(root)
    for how in ("SIGINT", "SIGKILL"):
        T2i = f"T2 write then think forever ({how})"
        model.script.add(T2i, [tools(call("exec_command", cmd=f"echo two {how} > notes.txt")),
                               Reply(hang=True)])
        proc = codex.start(T2i, resume=codex.thread_id(first))
        model.wait_for(lambda r: r.choice is not None and r.choice.prompt == T2i
                       and r.choice.step == 1)
        assert files(root)["notes.txt"] == f"two {how}\n"
        # the whole agent, native codex included (its npm launcher runs it as a child under Node 20)
        os.killpg(proc.pid, getattr(signal, how))
        proc.wait(60)
        commit = tb_json(codex, "rewind", "--after-response", "1", "--yes")["commit"]
        assert commit["status"] == "committed", (how, commit)
        assert files(root) == after_t1, how


def test_codex_reports_every_hook_completed(codex, model):
    """Through Codex's app-server (the engine its terminal UI embeds) each hook run is reported
    back with its status, output entries and duration: all of turnback's complete cleanly."""
    from turnback.bench.realagents import CodexThread, codex_hook_problems

    root = codex.root
    git_repo(root)
    seed(root, START)
    script(model, root)
    tb(codex, "hooks", "install", "codex", "--trust")
    thread = CodexThread(codex)
    try:
        for prompt in (T1, T2, T3):
            notes = thread.turn(prompt)
            assert notes[-1]["params"]["turn"]["status"] == "completed", notes[-1]
        runs = thread.hook_runs()
    finally:
        thread.close()
    assert not codex_hook_problems(runs), codex_hook_problems(runs)
    events = [r["eventName"] for r in runs]
    assert events.count("userPromptSubmit") == 3 and events.count("stop") == 3, events
    assert {"preToolUse", "postToolUse", "sessionStart"} <= set(events)
    assert all(isinstance(r.get("durationMs"), int) for r in runs)
    assert [t["prompt"] for t in tb_json(codex, "log")["turns"]] == [T1, T2, T3], hook_log(root)


def test_an_earlier_install_codex_clamps_is_mended_and_the_session_is_quiet(codex, model):
    """A hooks.json whose SessionEnd and Interrupt ask for 30 s (what an earlier turnback wrote, or
    a user's edit) makes Codex print an error item in every run, and `hooks status` says so;
    `hooks install codex --trust` mends it: a whole session's output then holds no error at all."""
    root = codex.root
    git_repo(root)
    seed(root, START)
    script(model, root)
    tb(codex, "hooks", "install", "codex", "--trust")
    hooks_file = root / ".codex" / "hooks.json"
    data = json.loads(hooks_file.read_text())
    for event in ("SessionEnd", "Interrupt"):
        data["hooks"][event][0]["hooks"][0]["timeout"] = 30
    hooks_file.write_text(json.dumps(data))
    assert "a timeout codex clamps" in tb(codex, "hooks", "status").stdout
    run = codex.exec(T1, extra=("--dangerously-bypass-hook-trust",))
    assert run.returncode == 0, run.stderr
    assert sorted(e["message"].split(" in ")[0] for e in hook_errors(run)
                  if e.get("message", "").startswith("clamping")) == [
        "clamping Interrupt hook timeout to 3s", "clamping SessionEnd hook timeout to 3s"], \
        hook_errors(run)

    out = tb(codex, "hooks", "install", "codex", "--trust").stdout
    assert "Interrupt" in out and "SessionEnd" in out, out
    data = json.loads(hooks_file.read_text())
    assert {data["hooks"][e][0]["hooks"][0]["timeout"] for e in ("SessionEnd", "Interrupt")} == {3}
    status = tb(codex, "hooks", "status").stdout
    assert "clamps" not in status and "will not run it" not in status, status
    thread = None
    for prompt in (T2, T3, T4):
        run = codex.exec(prompt, resume=thread)
        assert run.returncode == 0, run.stderr
        assert not hook_errors(run), (prompt, hook_errors(run))
        assert not [ln.data for ln in run.lines if ln.data.get("type") not in (
            "thread.started", "turn.started", "turn.completed", "item.started", "item.updated",
            "item.completed")], run.lines
        thread = thread or codex.thread_id(run)
    assert [t["prompt"] for t in tb_json(codex, "log")["turns"]][-3:] == [T2, T3, T4], hook_log(root)

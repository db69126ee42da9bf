"""The real Gemini CLI (npm @google/gemini-cli 0.61.0) with turnback's hooks installed by `turnback
hooks install gemini`, driven through scripted turns (`gemini -p`, then `--resume`) by a model server
on loopback speaking the Gemini API.

What must hold: Gemini runs the project's hooks only in a trusted folder, and `hooks status` says so
until then (docs/agents/gemini.md, followed here literally); its output has no error; turnback's log
has every turn with its prompt (never the context a hook added to it), answer, steps and files; a
rewind puts back every file (write_file's, replace's and the shell's) and Redo brings them back; the
next prompt after a rewind carries turnback's notice to the model; a run killed mid-turn can be
rewound at once."""

from __future__ import annotations

import os
import shlex
import signal
from pathlib import Path

from realkit import (files, hook_log, prompts_seen, rewind_all_redo_rewind_to_2, seed, tb,
                      tb_json, told)

from turnback.bench.mockmodel import Reply, call, say, tools
from turnback.bench.realgemini import Gemini, hook_problems

START = {"app.py": "def greet():\n    return 'hi'\n", "old.txt": "old\n"}
T1, T2, T3, T4 = "T1 write and replace", "T2 shell edits", "T3 a failing command", "T4 just talk"


def script(model, root: Path) -> None:
    model.script.add(T1, [tools(call("write_file", file_path=str(root / "notes.txt"),
                                     content="one\n"),
                                call("replace", file_path=str(root / "app.py"),
                                     old_string="'hi'", new_string="'hello'",
                                     instruction="greet with hello")),
                          say("T1 done")])
    model.script.add(T2, [tools(call("run_shell_command", command="printf 'two\\n' >> notes.txt "
                                     "&& echo made > made.txt && rm old.txt")), say("T2 done")])
    model.script.add(T3, [tools(call("run_shell_command",
                                     command="echo partial > partial.txt; cat missing.txt")),
                          tools(call("read_file", file_path=str(root / "missing.txt"))),
                          say("T3 done")])
    model.script.add(T4, [say("T4 done")])


def documented_steps() -> list[list[str]]:
    """The commands docs/agents/gemini.md gives, as written (its `sh` block of steps)."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "agents" / "gemini.md").read_text()
    block = text.split("The steps, in the project folder", 1)[1].split("```sh\n", 1)[1]
    block = block.split("```", 1)[0]
    return [shlex.split(line.split("#", 1)[0]) for line in block.splitlines()
            if line.strip() and not line.startswith("#")]


def gemini_row(gemini) -> dict:
    rows = tb_json(gemini, "hooks", "status")["agents"]
    return next(r for r in rows if r["agent"] == "gemini" and r["scope"] == "project")


def quiet(run) -> None:
    """A run that succeeded with nothing gone wrong in Gemini's own output."""
    assert run.returncode == 0, run.stderr[-3000:]
    assert not Gemini.errors(run), Gemini.errors(run)
    assert not hook_problems(run), run.stderr[-3000:]


def test_gemini_runs_the_hooks_only_in_a_trusted_folder(gemini, model):
    root = gemini.root
    seed(root, START)
    model.script.add("P1 untrusted", [say("answer 1")])
    model.script.add("P2 trusted", [say("answer 2")])
    steps = documented_steps()
    assert steps == [["turnback", "hooks", "install", "gemini"], ["gemini"],
                     ["turnback", "hooks", "status"]], steps
    out = tb(gemini, *steps[0][1:]).stdout
    assert "Gemini will not run it" in out and "trust" in out, out
    assert "not trusted" in (gemini_row(gemini)["gemini"]["blocked"] or "")
    run = gemini.run("P1 untrusted")
    assert run.returncode != 0 and "not running in a trusted directory" in run.stderr, run.stderr
    run = gemini.run("P1 untrusted", extra=("--skip-trust",))
    assert run.returncode == 0, run.stderr[-2000:]
    assert tb_json(gemini, "log")["turns"] == [], "Gemini ran the hooks in an untrusted folder"
    gemini.trust_folder()  # what answering "Trust folder" in `gemini` records
    status = tb(gemini, *steps[2][1:]).stdout
    assert "will not run it" not in status, status
    run = gemini.run("P2 trusted")
    quiet(run)
    turns = tb_json(gemini, "log")["turns"]
    assert [(t["prompt"], t["response"]) for t in turns] == [("P2 trusted", "answer 2")], \
        hook_log(root)


def test_gemini_session_logged_rewound_redone_and_told(gemini, model):
    root = gemini.root
    seed(root, START)
    script(model, root)
    tb(gemini, "hooks", "install", "gemini")
    gemini.trust_folder()
    states, session = [files(root)], None
    for prompt in (T1, T2, T3, T4):
        run = gemini.run(prompt, resume=session)
        quiet(run)
        session = session or gemini.session_id(run)
        states.append(files(root))
    assert states[-1] == {"app.py": "def greet():\n    return 'hello'\n", "notes.txt": "one\ntwo\n",
                          "made.txt": "made\n", "partial.txt": "partial\n"}
    turns = tb_json(gemini, "log")["turns"]
    assert [t["prompt"] for t in turns] == [T1, T2, T3, T4], hook_log(root)
    assert [t["response"] for t in turns] == ["T1 done", "T2 done", "T3 done", "T4 done"]
    assert [t["state"] for t in turns] == ["settled"] * 4
    assert [(s["kind"], s["scope"]) for s in turns[0]["stepList"]] == [("file-write", "host")] * 2
    assert {f["path"] for f in turns[0]["files"]} == {"notes.txt", "app.py"}
    assert {f["path"] for f in turns[1]["files"]} == {"notes.txt", "made.txt", "old.txt"}
    assert "Traceback" not in hook_log(root)

    rewind_all_redo_rewind_to_2(gemini, states)

    T5 = "T5 carry on after the rewind"
    model.script.add(T5, [say("T5 done")])
    run = gemini.run(T5, resume=session)
    quiet(run)
    seen = prompts_seen(model, T5)
    assert seen, [(r.choice and r.choice.prompt, [(i.role, i.text[-400:]) for i in r.convo][-3:])
                  for r in model.loop_requests()][-1:]
    first = seen[0]
    assert told(first, 2), [(i.role, i.text[:80]) for i in first.convo][-5:]
    turns = tb_json(gemini, "log")["turns"]
    assert [t["prompt"] for t in turns] == [T1, T2, T5], hook_log(root)


def test_a_killed_gemini_run_can_be_rewound_at_once(gemini, model):
    root = gemini.root
    seed(root, START)
    model.script.add(T1, [tools(call("run_shell_command", command="echo one > notes.txt")),
                          say("T1 done")])
    tb(gemini, "hooks", "install", "gemini")
    gemini.trust_folder()
    first = gemini.run(T1)
    quiet(first)
    after_t1 = files(root)
    for how in ("SIGINT", "SIGKILL"):
        T2k = f"T2 write then think forever ({how})"
        model.script.add(T2k, [tools(call("run_shell_command", command=f"echo two {how} > notes.txt")),
                               Reply(hang=True)])
        proc = gemini.start(T2k, resume=gemini.session_id(first))
        model.wait_for(lambda r: r.choice is not None and r.choice.prompt == T2k
                       and r.choice.step == 1, timeout=120)
        assert files(root)["notes.txt"] == f"two {how}\n"
        os.killpg(proc.pid, getattr(signal, how))
        proc.wait(60)
        commit = tb_json(gemini, "rewind", "--after-response", "1", "--yes")["commit"]
        assert commit["status"] == "committed", (how, commit, hook_log(root))
        assert files(root) == after_t1, how

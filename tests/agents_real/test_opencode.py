"""The real OpenCode (npm opencode-ai 1.18.33) with turnback's plugin installed by `turnback hooks
install opencode`, driven through scripted turns (`opencode run`, then `--session`) by a model server
on loopback speaking the Chat Completions API (an OpenAI-compatible provider).

What must hold: OpenCode loads the plugin and reports no error; turnback's log has every turn with
its prompt, answer, steps and files; a rewind puts back every file (write's, edit's and the
shell's) and Redo brings them back; the next prompt after a rewind carries turnback's notice to the
model; uninstall removes the plugin."""

from __future__ import annotations

from realkit import (files, hook_log, prompts_seen, rewind_all_redo_rewind_to_2, seed, tb,
                      tb_json, told)

from turnback.bench.mockmodel import call, say, tools
from turnback.bench.realopencode import OpenCode

START = {"app.py": "def greet():\n    return 'hi'\n", "old.txt": "old\n"}
T1, T2, T3, T4 = "T1 write and edit", "T2 shell edits", "T3 a failing command", "T4 just talk"


def script(model, root) -> None:
    model.script.add(T1, [tools(call("write", filePath=str(root / "notes.txt"), content="one\n")),
                          tools(call("edit", filePath=str(root / "app.py"), oldString="'hi'",
                                     newString="'hello'")),
                          say("T1 done")])
    model.script.add(T2, [tools(call("bash", command="printf 'two\\n' >> notes.txt && "
                                     "echo made > made.txt && rm old.txt", description="edits")),
                          say("T2 done")])
    model.script.add(T3, [tools(call("bash", command="echo partial > partial.txt; cat missing.txt",
                                     description="fails")),
                          say("T3 done")])
    model.script.add(T4, [say("T4 done")])


def quiet(run) -> None:
    assert run.returncode == 0, run.stderr[-3000:]
    assert not OpenCode.errors(run), OpenCode.errors(run)


def test_opencode_session_logged_rewound_redone_and_told(opencode, model):
    root = opencode.root
    seed(root, START)
    script(model, root)
    out = tb(opencode, "hooks", "install", "opencode").stdout
    assert "opencode: installed" in out, out
    plugin = root / ".opencode" / "plugin" / "turnback.js"
    assert plugin.exists()
    states, session = [files(root)], None
    for prompt in (T1, T2, T3, T4):
        run = opencode.run(prompt, session=session)
        quiet(run)
        session = session or opencode.session_id(run)
        states.append(files(root))
    assert states[-1] == {"app.py": "def greet():\n    return 'hello'\n", "notes.txt": "one\ntwo\n",
                          "made.txt": "made\n", "partial.txt": "partial\n"}
    turns = tb_json(opencode, "log")["turns"]
    assert [t["prompt"].strip('"') for t in turns] == [T1, T2, T3, T4], hook_log(root)
    assert [t["response"] for t in turns] == ["T1 done", "T2 done", "T3 done", "T4 done"], \
        hook_log(root)
    assert [t["state"] for t in turns] == ["settled"] * 4
    assert [(s["kind"], s["scope"]) for s in turns[0]["stepList"]] == [("file-write", "host")] * 2
    assert {f["path"] for f in turns[0]["files"]} == {"notes.txt", "app.py"}
    assert {f["path"] for f in turns[1]["files"]} == {"notes.txt", "made.txt", "old.txt"}
    assert "Traceback" not in hook_log(root)

    rewind_all_redo_rewind_to_2(opencode, states)

    T5 = "T5 carry on after the rewind"
    model.script.add(T5, [say("T5 done")])
    run = opencode.run(T5, session=session)
    quiet(run)
    seen = prompts_seen(model, T5)
    assert seen and told(seen[0], 2), [(i.role, i.text[:80]) for i in seen[0].convo][-5:] \
        if seen else model.loop_requests()[-1].convo[-3:]
    turns = tb_json(opencode, "log")["turns"]
    assert [t["prompt"].strip('"') for t in turns] == [T1, T2, T5], hook_log(root)

    assert "removed" in tb(opencode, "hooks", "uninstall", "opencode").stdout
    assert not plugin.exists()


def test_a_killed_opencode_run_can_be_rewound_at_once(opencode, model):
    """OpenCode is killed (SIGKILL, its whole process group) while the model is still answering
    turn 2: no session.idle ever comes, yet a rewind right after works and puts back what the turn
    had written; the plugin left the agent nothing to wait on."""
    import os
    import signal

    from turnback.bench.mockmodel import Reply

    root = opencode.root
    seed(root, START)
    model.script.add(T1, [tools(call("bash", command="echo one > notes.txt", description="one")),
                          say("T1 done")])
    T2k = "T2 write then think forever"
    model.script.add(T2k, [tools(call("bash", command="echo two > notes.txt", description="two")),
                           Reply(hang=True)])
    tb(opencode, "hooks", "install", "opencode")
    first = opencode.run(T1)
    quiet(first)
    after_t1 = files(root)
    proc = opencode.start(T2k, session=opencode.session_id(first))
    model.wait_for(lambda r: r.choice is not None and r.choice.prompt == T2k and r.choice.step == 1,
                   timeout=240)
    assert files(root)["notes.txt"] == "two\n"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(60)
    commit = tb_json(opencode, "rewind", "--after-response", "1", "--yes")["commit"]
    assert commit["status"] == "committed", (commit, hook_log(root))
    assert files(root) == after_t1

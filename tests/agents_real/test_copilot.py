"""The real GitHub Copilot CLI (npm @github/copilot 1.0.102) with turnback's hooks installed by
`turnback hooks install copilot`, pointed at the scripted model server as a custom provider
(BYOK, offline), driven through `copilot -p` then `--resume=`.

What must hold: every prompt is a turn with its steps and files (create, edit, shell edits); a
rewind restores the files and Redo brings them back; the next prompt after a rewind carries
turnback's notice to the model (Copilot reads a prompt hook's top-level additionalContext). What
Copilot does not give turnback (its agentStop carries no answer) is said in docs/agents/copilot.md
and checked here as it is."""

from __future__ import annotations

from realkit import (files, hook_log, prompts_seen, rewind_all_redo_rewind_to_2, seed, tb, tb_json,
                     told)

from turnback.bench.mockmodel import call, say, tools

START = {"app.py": "def greet():\n    return 'hi'\n", "old.txt": "old\n"}
C1, C2, C3 = "C1 create and edit", "C2 shell edits", "C3 just talk"


def test_copilot_session_logged_rewound_and_redone(copilot, model):
    root = copilot.root
    seed(root, START)
    model.script.add(C1, [tools(call("create", path=str(root / "notes.txt"), file_text="one\n")),
                          tools(call("edit", path=str(root / "app.py"), old_str="'hi'",
                                     new_str="'hello'")),
                          say("C1 done")])
    model.script.add(C2, [tools(call("bash", command="printf 'two\\n' >> notes.txt && "
                                     "echo made > made.txt && rm old.txt", description="edit")),
                          say("C2 done")])
    model.script.add(C3, [say("C3 done")])
    tb(copilot, "hooks", "install", "copilot")
    states, session = [files(root)], None
    for prompt in (C1, C2, C3):
        run = copilot.run(prompt, session)
        assert run.returncode == 0, run.stderr[-2000:]
        session = session or copilot.session_id(run)
        states.append(files(root))
    assert states[-1] == {"app.py": "def greet():\n    return 'hello'\n", "notes.txt": "one\ntwo\n",
                          "made.txt": "made\n"}
    turns = tb_json(copilot, "log")["turns"]
    assert [t["prompt"] for t in turns] == [C1, C2, C3], hook_log(root)
    assert [t["state"] for t in turns] == ["settled"] * 3, hook_log(root)
    assert [(s["kind"], s["scope"]) for s in turns[0]["stepList"]] == [("file-write", "host")] * 2
    assert {f["path"] for f in turns[1]["files"]} == {"notes.txt", "made.txt", "old.txt"}
    # Copilot 1.0.102's agentStop carries no answer: it is read from the transcript it names
    assert [t["response"] for t in turns] == ["C1 done", "C2 done", "C3 done"]
    assert "Traceback" not in hook_log(root)
    rewind_all_redo_rewind_to_2(copilot, states)

    C4 = "C4 carry on after the rewind"
    model.script.add(C4, [say("C4 done")])
    run = copilot.run(C4, session)
    assert run.returncode == 0, run.stderr[-2000:]
    seen = prompts_seen(model, C4)
    assert seen, [(r.choice and r.choice.prompt, [(i.role, i.text[-300:]) for i in r.convo][-2:])
                  for r in model.loop_requests()][-1:]
    assert told(seen[0], 2), [(i.role, i.text[:80]) for i in seen[0].convo][-5:]
    assert [t["prompt"] for t in tb_json(copilot, "log")["turns"]] == [C1, C2, C4], hook_log(root)

"""The real Claude Code CLI (npm @anthropic-ai/claude-code 2.1.328) with turnback's hooks installed by
`turnback hooks install claude-code`, driven through scripted turns by a model server on loopback:
file tools, shell edits, failing tools, a helper, an interrupt, an API error and a resume.

What must hold: the agent reports no hook error; turnback's log has every turn with its prompt,
answer, steps and files; a rewind puts back every file (the shell's edits included) and Redo brings
them back; the resume command turnback prints, run for real, gives the model a conversation that ends
at the turn rewound to, and the next request carries turnback's notice."""

from __future__ import annotations

import json
import shlex
import shutil

from realkit import (conversation_prompts, files, hook_log, prompts_seen,
                      rewind_all_redo_rewind_to_2, seed, tb, tb_json, told)

from turnback.bench.mockmodel import Reply, call, say, tools
from turnback.bench.realagents import hook_problems

START = {"app.py": "def greet():\n    return 'hi'\n", "old.txt": "old\n"}
T1, T2, T3, T4 = ("T1 add notes and say hello", "T2 shell edits", "T3 a failing tool",
                  "T4 ask a helper")
HELPER = "H1 the helper writes its file"


def script(model, root):
    model.script.add(T1, [tools(call("Write", file_path=str(root / "notes.txt"), content="one\n"),
                                call("Edit", file_path=str(root / "app.py"), old_string="'hi'",
                                     new_string="'hello'")),
                          say("T1 done: notes and hello")])
    model.script.add(T2, [tools(call("Bash", command="printf 'two\\n' >> notes.txt && "
                                     "echo made > made.txt && rm old.txt", description="edit")),
                          say("T2 done: shell edits")])
    model.script.add(T3, [tools(call("Read", file_path=str(root / "missing.txt")),
                                call("Bash", command="echo partial > partial.txt; exit 3",
                                     description="fails")),
                          say("T3 done: it failed")])
    model.script.add(T4, [tools(call("Agent", description="helper task", prompt=HELPER,
                                     subagent_type="general-purpose", run_in_background=False)),
                          say("T4 done: the helper wrote")])
    model.script.add(HELPER, [tools(call("Write", file_path=str(root / "helper.txt"),
                                         content="from the helper\n")),
                              say("helper wrote helper.txt")])


def install(claude) -> str:
    out = tb(claude, "hooks", "install", "claude-code").stdout
    hooks = json.loads((claude.root / ".claude" / "settings.json").read_text())["hooks"]
    command = hooks["Stop"][0]["hooks"][0]["command"]
    assert shlex.split(command)[0].startswith("/"), "the hook names turnback by absolute path"
    assert shutil.which("turnback", path=claude.env["PATH"]) is None, \
        "the agent's PATH has no turnback of its own: only the absolute command can work"
    return out


def four_turns(claude, model):
    """T1..T4 in one session; the files after each turn."""
    seed(claude.root, START)
    script(model, claude.root)
    install(claude)
    states = [files(claude.root)]
    session = claude.session()
    for prompt in (T1, T2, T3, T4):
        result = session.prompt(prompt)
        assert result["subtype"] == "success", result
        states.append(files(claude.root))
    assert session.close() == 0
    return session, states


def test_four_turns_logged_rewound_and_redone(claude, model):
    session, states = four_turns(claude, model)
    root = claude.root
    assert not hook_problems(session.lines), hook_problems(session.lines)
    assert len(session.reader.lines) and any(
        d.data.get("subtype") == "hook_response" for d in session.lines), "the hooks ran"
    assert states[-1] == {"app.py": "def greet():\n    return 'hello'\n", "notes.txt": "one\ntwo\n",
                          "made.txt": "made\n", "partial.txt": "partial\n",
                          "helper.txt": "from the helper\n"}
    log = tb_json(claude, "log")
    turns = log["turns"]
    assert [t["prompt"] for t in turns] == [T1, T2, T3, T4], hook_log(root)
    assert [t["state"] for t in turns] == ["settled"] * 4
    assert [t["response"] for t in turns] == ["T1 done: notes and hello", "T2 done: shell edits",
                                              "T3 done: it failed", "T4 done: the helper wrote"]
    steps = [[(s["kind"], s["scope"]) for s in t["stepList"]] for t in turns]
    assert steps[0] == [("file-write", "host"), ("file-write", "host")]
    assert steps[1] == [("shell", "unknown")]
    assert any("failed" in s["summary"] for s in turns[2]["stepList"]), turns[2]["stepList"]
    assert {f["path"] for f in turns[0]["files"]} == {"notes.txt", "app.py"}
    assert {f["path"] for f in turns[1]["files"]} == {"notes.txt", "made.txt", "old.txt"}
    assert "helper.txt" in {f["path"] for f in turns[3]["files"]}

    # every file back as it was before the first prompt (the shell's edits and the helper's too),
    # Redo brings the four turns back, and a rewind to turn 2 takes exactly turns 3 and 4 away
    commit = rewind_all_redo_rewind_to_2(claude, states)

    # the rewind printed `claude --resume S --resume-session-at U` (its `agentResume`); run as
    # printed, Claude Code sends the model a conversation that ends at turn 2 (the resume point
    # followed the Redo and the rewind after it), with turnback's notice
    resume = tb_json(claude, "info")["agent"]["resume"]
    assert commit["agentResume"]["command"] == resume["command"], commit.get("agentResume")
    assert resume["command"].startswith(f"claude --resume {session.session_id} --resume-session-at ")
    T5 = "T5 carry on after the rewind"
    model.script.add(T5, [say("T5 done")])
    run = claude.run_argv(claude.resume_command(resume["command"], T5))
    assert run.returncode == 0, run.stderr
    assert not hook_problems(run.lines), hook_problems(run.lines)
    first = prompts_seen(model, T5)[0]
    # the model hears turns 1 and 2 and the new prompt: nothing of turns 3 and 4
    assert conversation_prompts(first, [T1, T2, T3, T4, T5]) == [T1, T2, T5]
    answers = [i.text for i in first.convo if i.role == "assistant" and i.kind == "text"]
    assert answers[-1] == "T2 done: shell edits", answers
    assert not any("Tool result missing" in i.text for i in first.convo), \
        "turn 2 is whole: no tool call cut from its result"
    # and the model is told what turnback did, in the request that carries the new prompt
    assert told(first, 2), [(i.role, i.text[:80]) for i in first.convo][-5:]
    assert [t["prompt"] for t in tb_json(claude, "log")["turns"]] == [T1, T2, T5]


def test_an_interrupted_turn_can_be_rewound_at_once(claude, model):
    """The agent is stopped while the model is still answering turn 2, by SIGINT, then (the
    conversation resumed) by SIGKILL: no Stop, no SessionEnd. Each time, a rewind right after works and puts back
    what the turn had already written (its file tool's and its shell's)."""
    import signal

    seed(claude.root, START)
    root = claude.root
    model.script.add(T1, [tools(call("Write", file_path=str(root / "notes.txt"), content="one\n")),
                          say("T1 done")])
    install(claude)
    session = claude.session()
    assert session.prompt(T1)["subtype"] == "success"
    after_t1, sid = files(root), session.session_id
    for how in ("SIGINT", "SIGKILL"):
        T2i = f"T2 write then think forever ({how})"
        model.script.add(T2i, [tools(call("Write", file_path=str(root / "notes.txt"),
                                          content=f"two {how}\n"),
                                     call("Bash", command="echo side > side.txt", description="side")),
                               Reply(hang=True)])
        session = session or claude.session("--resume", sid)  # the same conversation, resumed
        session.send(T2i)
        model.wait_for(lambda r: r.choice is not None and r.choice.prompt == T2i
                       and r.choice.step == 1)
        assert files(root)["notes.txt"] == f"two {how}\n"
        session.proc.send_signal(getattr(signal, how))
        session.proc.wait(60)
        if session.proc.poll() is None:
            session.kill()
        assert not hook_problems(session.lines), hook_problems(session.lines)
        commit = tb_json(claude, "rewind", "--after-response", "1", "--yes")["commit"]
        assert commit["status"] == "committed", (how, commit)
        assert files(root) == after_t1, how
        session = None


def test_an_api_error_ends_the_turn_and_the_notice_reaches_the_model(claude, model):
    """The model answers turn 2 with an API error (Claude Code's StopFailure): the turn ends, its
    file edits are logged, and it can be rewound at once. After that rewind the model is told, in
    the next request that carries a prompt: in the session that is still open, and after `claude
    --resume S` (no resume point) once the session was closed."""
    seed(claude.root, START)
    root = claude.root
    model.script.add(T1, [tools(call("Write", file_path=str(root / "notes.txt"), content="one\n")),
                          say("T1 done")])
    T2e = "T2 edit then the API fails"
    model.script.add(T2e, [tools(call("Write", file_path=str(root / "notes.txt"), content="two\n")),
                           Reply(error=(400, "invalid_request_error", "scripted failure"))])
    install(claude)
    session = claude.session()
    assert session.prompt(T1)["subtype"] == "success"
    after_t1 = files(root)
    result = session.prompt(T2e)
    assert result.get("is_error"), result
    # the agent is still open and idle, as a person would leave it: the turn has ended all the same
    log = tb_json(claude, "log")
    assert [t["prompt"] for t in log["turns"]] == [T1, T2e]
    assert log["turns"][1]["state"] != "running", log["turns"][1]
    assert "notes.txt" in {f["path"] for f in log["turns"][1]["files"]}
    commit = tb_json(claude, "rewind", "--after-response", "1", "--yes")["commit"]
    assert commit["status"] == "committed", commit
    assert files(root) == after_t1

    T3n = "T3 in the same session after the rewind"
    model.script.add(T3n, [say("T3 done")])
    assert session.prompt(T3n)["subtype"] == "success"
    first = prompts_seen(model, T3n)[0]
    assert told(first, 1), [(i.role, i.text[:80]) for i in first.convo][-5:]
    session.close()  # Claude Code may exit 1 after a session with a turn that ended in an API error
    assert not hook_problems(session.lines), hook_problems(session.lines)

    tb(claude, "rewind", "--after-response", "1", "--yes")
    T4n = "T4 after a plain resume"
    model.script.add(T4n, [say("T4 done")])
    run = claude.run(T4n, "--resume", session.session_id)
    assert run.returncode == 0, run.stderr
    assert not hook_problems(run.lines), hook_problems(run.lines)
    first = prompts_seen(model, T4n)[0]
    assert told(first, 1), [(i.role, i.text[:80]) for i in first.convo][-5:]
    log = tb_json(claude, "log")
    assert [t["prompt"] for t in log["turns"]] == [T1, T4n]


def test_a_fork_goes_on_in_the_branch_with_the_real_agent(claude, model):
    """`turnback fork --turn 1` of a real Claude Code session, then the command the fork printed,
    run for real: the model hears turn 1 and the new prompt (nothing of turn 2) and is told of the
    fork; the hooks record the new prompt as turn 2 of the branch; the parent stays frozen with
    both of its turns; and the files are turn 1's plus what the branch wrote."""
    seed(claude.root, START)
    root = claude.root
    F1, F2, F3 = "F1 write the plan", "F2 rewrite the plan", "F3 the branch's own turn"
    model.script.add(F1, [tools(call("Write", file_path=str(root / "plan.txt"), content="plan one\n")),
                          say("F1 done")])
    model.script.add(F2, [tools(call("Write", file_path=str(root / "plan.txt"), content="plan two\n"),
                                call("Write", file_path=str(root / "extra.txt"), content="extra\n")),
                          say("F2 done")])
    model.script.add(F3, [tools(call("Write", file_path=str(root / "branch.txt"), content="branch\n")),
                          say("F3 done")])
    install(claude)
    session = claude.session()
    assert session.prompt(F1)["subtype"] == "success"
    after_f1 = files(root)
    assert session.prompt(F2)["subtype"] == "success"
    assert session.close() == 0
    assert not hook_problems(session.lines), hook_problems(session.lines)
    parent = tb_json(claude, "log")
    assert [t["prompt"] for t in parent["turns"]] == [F1, F2], hook_log(root)

    out = tb_json(claude, "fork", "--turn", "1", "--yes")
    forked = out["confirm"]
    assert forked["status"] == "forked", out
    assert files(root) == after_f1  # turn 2's writes are undone, nothing else touched
    resume = forked["agentResume"]
    assert resume["command"].startswith(f"claude --resume {session.session_id} --resume-session-at ")

    run = claude.run_argv(claude.resume_command(resume["command"], F3))
    assert run.returncode == 0, run.stderr
    assert not hook_problems(run.lines), hook_problems(run.lines)
    first = prompts_seen(model, F3)[0]
    assert conversation_prompts(first, [F1, F2, F3]) == [F1, F3]
    assert told(first, 1), [(i.role, i.text[:80]) for i in first.convo][-5:]

    branch = tb_json(claude, "log")
    assert branch["sessionId"] == forked["branch"]["sessionId"] != parent["sessionId"]
    assert [t["prompt"] for t in branch["turns"]] == [F1, F3], hook_log(root)
    assert [t["state"] for t in branch["turns"]] == ["settled", "settled"]
    assert {f["path"] for f in branch["turns"][1]["files"]} == {"branch.txt"}
    view = tb_json(claude, "branch")
    frozen = {s["sessionId"]: s for s in view["sessions"]}[parent["sessionId"]]
    assert frozen["frozen"] and frozen["turnCount"] == 2, frozen  # the hooks never wrote to it
    assert files(root) == {**after_f1, "branch.txt": "branch\n"}

"""Claude driven over the Agent Client Protocol, as agent-shell (Emacs) and Zed drive it: the real
npm @agentclientprotocol/claude-agent-acp 0.101.0 on stdio, with turnback's Claude Code hooks
installed by `turnback hooks install claude-code` (the Agent SDK under it loads the project's
settings: measured, the hooks fire; no ACP proxy is needed).

What must hold: every prompt over ACP is a turn in turnback's log with its answer, steps and files;
a rewind restores the files (file tool and shell edits) and Redo brings them back; the next prompt
of the same ACP session carries turnback's notice to the model."""

from __future__ import annotations

from realkit import files, hook_log, prompts_seen, rewind_all_redo_rewind_to_2, seed, tb, tb_json, told

from turnback.bench.mockmodel import call, say, tools

START = {"app.py": "def greet():\n    return 'hi'\n", "old.txt": "old\n"}
A1, A2, A3 = "A1 write and edit", "A2 shell edits", "A3 just talk"


def test_claude_over_acp_logged_rewound_redone_and_told(claude_acp, model):
    root = claude_acp.root
    seed(root, START)
    model.script.add(A1, [tools(call("Write", file_path=str(root / "notes.txt"), content="one\n"),
                                call("Edit", file_path=str(root / "app.py"), old_string="'hi'",
                                     new_string="'hello'")),
                          say("A1 done")])
    model.script.add(A2, [tools(call("Bash", command="printf 'two\\n' >> notes.txt && "
                                     "echo made > made.txt && rm old.txt", description="edit")),
                          say("A2 done")])
    model.script.add(A3, [say("A3 done")])
    tb(claude_acp, "hooks", "install", "claude-code")
    claude_acp.start()
    try:
        states = [files(root)]
        for prompt in (A1, A2, A3):
            result = claude_acp.prompt(prompt)
            assert result.get("stopReason") == "end_turn", result
            states.append(files(root))
        assert states[-1] == {"app.py": "def greet():\n    return 'hello'\n",
                              "notes.txt": "one\ntwo\n", "made.txt": "made\n"}
        turns = tb_json(claude_acp, "log")["turns"]
        assert [(t["prompt"], t["response"]) for t in turns] == [
            (A1, "A1 done"), (A2, "A2 done"), (A3, "A3 done")], hook_log(root)
        assert {f["path"] for f in turns[0]["files"]} == {"notes.txt", "app.py"}
        assert {f["path"] for f in turns[1]["files"]} == {"notes.txt", "made.txt", "old.txt"}
        assert "Traceback" not in hook_log(root)

        rewind_all_redo_rewind_to_2(claude_acp, states)

        A4 = "A4 carry on after the rewind"
        model.script.add(A4, [say("A4 done")])
        assert claude_acp.prompt(A4).get("stopReason") == "end_turn"
        seen = prompts_seen(model, A4)
        assert seen and told(seen[0], 2), seen and [(i.role, i.text[:80]) for i in seen[0].convo][-5:]
        assert [t["prompt"] for t in tb_json(claude_acp, "log")["turns"]] == [A1, A2, A4]
    finally:
        claude_acp.close()

"""`hooks install AGENT --user` writes where the real agent reads its own settings for every
project, following its config-folder variable (CLAUDE_CONFIG_DIR, CODEX_HOME): the agent then feeds
turnback in any workspace turnback knows."""

from __future__ import annotations

import subprocess

from realkit import files, hook_log, tb, tb_json

from turnback.bench.mockmodel import call, say, tools
from turnback.bench.realagents import hook_problems


def test_claude_code_reads_the_user_install_in_its_config_dir(claude, model):
    root = claude.root
    (root / "turnback.toml").write_text("")  # a workspace turnback knows; no project hooks
    out = tb(claude, "hooks", "install", "claude-code", "--user").stdout
    assert str(claude.config / "settings.json") in out, out
    assert not (claude.home / ".claude").exists(), "nothing in the home folder Claude Code ignores"
    model.script.add("U1 user hooks", [tools(call("Write", file_path=str(root / "u.txt"),
                                                  content="u\n")), say("U1 done")])
    run = claude.run("U1 user hooks")
    assert run.returncode == 0, run.stderr
    assert not hook_problems(run.lines), hook_problems(run.lines)
    log = tb_json(claude, "log")
    assert [t["prompt"] for t in log["turns"]] == ["U1 user hooks"], hook_log(root)
    assert {f["path"] for f in log["turns"][0]["files"]} == {"u.txt"}


def test_codex_reads_the_user_install_in_its_codex_home(codex, model):
    root = codex.root
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "turnback.toml").write_text("")
    out = tb(codex, "hooks", "install", "codex", "--user", "--trust").stdout
    assert str(codex.codex_home / "hooks.json") in out, out
    assert "will not run it" not in out, out
    model.script.add("U1 user hooks", [tools(call("exec_command", cmd="echo u > u.txt")),
                                       say("U1 done")])
    run = codex.exec("U1 user hooks")
    assert run.returncode == 0, run.stderr
    assert files(root) == {"u.txt": "u\n"}
    log = tb_json(codex, "log")
    assert [t["prompt"] for t in log["turns"]] == ["U1 user hooks"], hook_log(root)
    assert "projects" not in (codex.codex_home / "config.toml").read_text(), \
        "a user install trusts no project"

"""Honest scopes for every known tool (issue 22, item 6): each agent's page in docs/agents/ has a table of
every tool that agent documents; every row maps as it says (`hooks/tools.py`), and no tool of the
code's table is missing from the page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from turnback.hooks import agents, config
from turnback.hooks.tools import TOOLS, classify

DOCS = Path(__file__).resolve().parents[2] / "docs" / "agents"
PAGES = {"claude-code": "claude-code.md", "codex": "codex.md", "gemini": "gemini.md",
         "copilot": "copilot.md", "cursor": "cursor.md", "opencode": "opencode.md"}
ROW = re.compile(r"^\| `([^`]+)` \| ([^|]+) \| `([a-z-]+)` \| ([a-z ]+) \|$")
# an input that names a target (file tools) and a command (shells) in every spelling the tables use
SAMPLE = {"file_path": "/w/t.txt", "path": "/w/t.txt", "filePath": "/w/t.txt", "notebook_path": "/w/t.ipynb",
          "target_file": "/w/t.txt", "replacements": [{"filePath": "/w/t.txt"}],
          "command": "git push origin main", "cmd": "git push origin main", "chars": "git push origin main",
          "patch": "*** Update File: t.txt\n", "input": "git push origin main"}


def table_of(agent: str) -> dict[str, tuple[str, str]]:
    text = (DOCS / PAGES[agent]).read_text()
    start, end = text.index("<!-- tools"), text.index("<!-- /tools -->")
    rows = {}
    for line in text[start:end].splitlines():
        m = ROW.match(line.strip())
        if m:
            assert m.group(1) not in rows, f"{PAGES[agent]}: {m.group(1)} twice"
            rows[m.group(1)] = (m.group(3), m.group(4).strip())
    return rows


@pytest.mark.parametrize("agent", list(PAGES))
def test_every_documented_tool_maps_as_its_table_says(agent):
    rows = table_of(agent)
    assert len(rows) >= 10, f"{PAGES[agent]} has no tool table"
    shells = config.load(Path("/nonexistent"))
    for tool, (kind, scope) in rows.items():
        use = classify(tool, dict(SAMPLE), "/w", agent)
        assert use.kind == kind, (agent, tool, use.kind, kind)
        if scope == "scope table":
            assert use.scope is None and use.group == "shell", (agent, tool)
            assert shells.shell_scope(use.command)[0] == "crossing"  # its command went to the table
        else:
            assert use.scope == scope, (agent, tool, use.scope, scope)


@pytest.mark.parametrize("agent", list(PAGES))
def test_no_tool_of_the_code_is_left_out_of_its_page(agent):
    assert set(TOOLS[agent]) == set(table_of(agent))


def test_the_tools_the_issue_names():
    want = {("claude-code", "PowerShell"): ("shell", None), ("claude-code", "Agent"): ("other", "none"),
            ("claude-code", "AskUserQuestion"): ("think", "none"),
            ("claude-code", "Monitor"): ("shell", None), ("claude-code", "Skill"): ("read", "none"),
            ("claude-code", "TodoWrite"): ("think", "none"),
            ("copilot", "grep"): ("read", "none"), ("copilot", "glob"): ("read", "none"),
            ("copilot", "view"): ("read", "none"), ("copilot", "task"): ("other", "none"),
            ("gemini", "write_todos"): ("think", "none"), ("gemini", "delegate_to_agent"): ("other", "none"),
            ("codex", "spawn_agent"): ("other", "none"), ("codex", "exec_command"): ("shell", None)}
    for (agent, tool), expected in want.items():
        use = classify(tool, {"command": "ls", "cmd": "ls"}, "/w", agent)
        assert (use.kind, use.scope) == expected, (agent, tool)
    assert classify("mcp__github__create_issue", {}, "/w", "claude-code").scope == "unknown"
    assert classify("MCP:linear_create_issue", {}, "/w", "cursor").scope == "unknown"
    assert classify("NewToolOfTomorrow", {}, "/w", "claude-code").scope == "unknown"
    # a Monitor watching a WebSocket reads, a Monitor running a command is a shell
    ws = classify("Monitor", {"ws": {"url": "wss://x"}}, "/w", "claude-code")
    assert (ws.kind, ws.scope) == ("network-fetch", "none")


def test_every_agent_is_known_to_each_command_line_entry():
    from turnback.cli import fast, hooks_cmd

    assert tuple(fast._HOOK_AGENTS) == agents.AGENTS == tuple(hooks_cmd.AGENTS)
    from turnback.hooks import install

    assert set(install.FILES) == set(agents.AGENTS) == set(PAGES)

"""`turnback demo --agent claude-code` replays the recorded session through the real hook command and
verifies itself: every hook exits 0, the rewind restores every file (the Bash edit included), Redo
brings it back."""

from __future__ import annotations

import json
import subprocess
import sys


def test_demo_agent_claude_code(tmp_path):
    keep = tmp_path / "demo"
    proc = subprocess.run([sys.executable, "-m", "turnback", "demo", "--agent", "claude-code",
                           "--keep", str(keep), "--json"], capture_output=True, text=True,
                          timeout=300, env={"TURNBACK_HOOK_DIRECT": "1", **__import__("os").environ})
    assert proc.returncode == 0, proc.stderr
    account = json.loads(proc.stdout)
    assert account["ok"] and account["agent"] == "claude-code"
    names = {c["name"]: c["ok"] for c in account["checks"]}
    assert names["every file is back, shell edits included"]
    assert names["Redo brings it all back"]
    assert (keep / "workspace" / "README.md").read_text() == "# tiny\n\nA new greeting app.\n"

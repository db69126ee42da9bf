"""Through a live sidecar, a hook imports nothing beyond the standard library and turnback's thin
parts: no workbench, no store reader, no third-party package; the store is never opened."""

from __future__ import annotations

import json
import subprocess
import sys

from hookkit import tb

HEAVY = ("turnback.workbench", "turnback.timeline", "turnback.capture", "turnback.lsp",
         "turnback.store.layout", "turnback.store.objects", "pygls", "lsprotocol", "cbor2",
         "xxhash", "psutil", "pathspec", "zstandard", "argparse")

PROBE = """
import io, json, sys
sys.argv = ["turnback", "hook", "claude-code"]
sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv and {payload!r}.encode()))
from turnback.cli.fast import main
code = main(["hook", "claude-code"])
heavy = sorted(m for m in sys.modules if m.startswith({heavy!r}))
print(json.dumps({{"code": code, "heavy": heavy}}))
"""


def test_hook_through_a_live_sidecar_stays_light(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "turnback.toml").write_text("")
    from turnback.remote.client import ensure_owner

    ensure_owner(str(root), str(root / ".turnback"), timeout=60)
    try:
        for event in ({"hook_event_name": "UserPromptSubmit", "prompt": "hi"},
                      {"hook_event_name": "PreToolUse", "tool_name": "Bash",
                       "tool_input": {"command": "ls"}, "tool_use_id": "t1"}):
            payload = json.dumps({"session_id": "s", "cwd": str(root), "transcript_path": None,
                                  **event})
            probe = PROBE.format(payload=payload, heavy=HEAVY)
            proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                  cwd=root, timeout=120)
            assert proc.returncode == 0, proc.stderr
            result = json.loads(proc.stdout.strip().splitlines()[-1])
            assert result == {"code": 0, "heavy": []}
        info = json.loads(tb(root, "info", "--json").stdout)
        assert info["turnCount"] == 1 and info["ownership"] == "owner"
    finally:
        tb(root, "daemon", "stop", check=False)

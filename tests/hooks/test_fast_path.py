"""Through a live sidecar, a hook imports nothing beyond the standard library and turnback's thin
parts: no workbench, no store reader, no third-party package; the store is never opened. For the
usual event (nothing to print) it does not even import `json`, `socket` or `re`: the sidecar's quiet
answer is recognised byte for byte (hooks/fast.py). Of the store it imports only the trust check."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

from hookkit import tb

HEAVY = ("turnback.workbench", "turnback.timeline", "turnback.capture", "turnback.lsp",
         "turnback.store.layout", "turnback.store.objects", "pygls", "lsprotocol", "cbor2",
         "xxhash", "psutil", "pathspec", "zstandard", "argparse")
LEAN = ("json", "socket", "re", "enum", "turnback.hooks.mapper", "turnback.hooks.runtime",
        "turnback.hooks.fallback", "turnback.hooks.reply", "turnback.hooks.drain",
        "turnback.remote.client", "turnback.store")
# The one store module the walk needs: whether a folder is the user's own (os and stat only), and
# the packages above it (store/ownership/__init__.py imports nothing).
TRUST = ["turnback.store", "turnback.store.ownership", "turnback.store.ownership.owned"]

PROBE = """
import io, sys
sys.argv = ["turnback", "hook", "claude-code"]
sys.stdin = io.TextIOWrapper(io.BytesIO({payload!r}.encode()))
from turnback.cli.fast import main
code = main(["hook", "claude-code"])
loaded = sorted(m for m in sys.modules if m.split(".")[0] in {roots!r} or m.startswith({names!r}))
print(repr({{"code": code, "loaded": loaded}}))
"""


def probe(root, payload: dict, names) -> dict:
    roots = sorted({n.split(".")[0] for n in names if "." not in n})
    script = PROBE.format(payload=json.dumps(payload), roots=roots, names=tuple(names))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=root,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return ast.literal_eval(proc.stdout.strip().splitlines()[-1])


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
            payload = {"session_id": "s", "cwd": str(root), "transcript_path": None, **event}
            assert probe(root, payload, HEAVY + LEAN) == {"code": 0, "loaded": TRUST}
        info = json.loads(tb(root, "info", "--json").stdout)
        assert info["turnCount"] == 1 and info["ownership"] == "owner"
    finally:
        tb(root, "daemon", "stop", check=False)

"""`turnback serve` accepts the transport flags language clients add (vscode-languageclient appends
--stdio), and refuses the transports it does not offer with a clear message instead of a crash loop."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


def _frame(payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_serve_accepts_stdio_flag(tmp_path):
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"processId": None, "rootUri": tmp_path.as_uri(), "capabilities": {}}}
    shutdown = {"jsonrpc": "2.0", "id": 2, "method": "shutdown"}
    exit_ = {"jsonrpc": "2.0", "method": "exit"}
    proc = subprocess.run([sys.executable, "-m", "turnback", "serve", "--stdio"],
                          input=_frame(init) + _frame(shutdown) + _frame(exit_), capture_output=True,
                          cwd=tmp_path, timeout=60, env=dict(os.environ))
    assert b"unrecognized arguments" not in proc.stderr
    assert b'"id": 1' in proc.stdout or b'"id":1' in proc.stdout, proc.stderr.decode()[-2000:]
    assert b'"capabilities"' in proc.stdout


@pytest.mark.parametrize("flag", ["--socket=4000", "--pipe=x"])
def test_serve_refuses_other_transports_clearly(tmp_path, flag):
    proc = subprocess.run([sys.executable, "-m", "turnback", "serve", flag], capture_output=True,
                          cwd=tmp_path, timeout=60)
    assert proc.returncode != 0
    assert b"not supported" in proc.stderr

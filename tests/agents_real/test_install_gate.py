"""The real-agent tests install the agents themselves, and skip only when npm cannot reach its
registry and TURNBACK_REQUIRE_REAL_AGENTS is unset; with it set (as `.ci/run` does) they fail."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _run_inner(tmp_path, *, require: bool) -> subprocess.CompletedProcess:
    """One real-agent test in a child pytest, with an empty agent cache and an npm that cannot
    reach any registry."""
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    npm = fake / "npm"
    npm.write_text("#!/bin/sh\necho 'npm ERR! network request to https://registry.npmjs.org "
                   "failed (scripted)' >&2\nexit 1\n")
    npm.chmod(0o755)
    env = {k: v for k, v in os.environ.items()
           if k not in ("TURNBACK_REQUIRE_REAL_AGENTS", "TURNBACK_AGENTS_BIN")}
    env.update(PATH=f"{fake}:{env.get('PATH', '/usr/bin:/bin')}",
               TURNBACK_CI_CACHE=str(tmp_path / "empty-cache"))
    if require:
        env["TURNBACK_REQUIRE_REAL_AGENTS"] = "1"
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs",
                           str(HERE / "test_claude_code.py"), "-k", "four_turns"],
                          cwd=HERE.parents[1], env=env, capture_output=True, text=True,
                          timeout=300)


def test_no_registry_skips_with_the_reason(tmp_path):
    proc = _run_inner(tmp_path, require=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 skipped" in proc.stdout
    assert "npm cannot reach its registry" in proc.stdout
    assert "TURNBACK_REQUIRE_REAL_AGENTS" in proc.stdout


def test_required_agents_fail_instead_of_skipping(tmp_path):
    proc = _run_inner(tmp_path, require=True)
    assert proc.returncode != 0
    assert "1 error" in proc.stdout or "1 failed" in proc.stdout, proc.stdout
    assert "installing the real agents failed" in proc.stdout

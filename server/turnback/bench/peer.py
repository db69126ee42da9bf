"""The shadow-git peer: checkpoints the way Cline and Gemini CLI take them today.

A separate git directory (`GIT_DIR`) over the workspace (`GIT_WORK_TREE`); a checkpoint is `git add -A`
then `git commit --allow-empty --no-verify`; a restore is `git restore --source=<commit> --staged
--worktree -- .` then `git clean -fd`. Git runs with its defaults except that automatic gc is off
(`gc.auto=0`), so a background repack cannot land inside another measurement (packing would shrink the
repository's block usage: the scenario reports apparent bytes too). Note that git does not fsync loose
objects by default: its checkpoints are not durable against a crash, ours are.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path


class ShadowGit:
    def __init__(self, git_dir: Path, work_tree: Path, home: Path):
        self.git_dir = Path(git_dir)
        self.work_tree = Path(work_tree)
        home.mkdir(parents=True, exist_ok=True)
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_DIR": str(self.git_dir), "GIT_WORK_TREE": str(self.work_tree),
            "GIT_AUTHOR_NAME": "checkpoint", "GIT_AUTHOR_EMAIL": "checkpoint@example.invalid",
            "GIT_COMMITTER_NAME": "checkpoint", "GIT_COMMITTER_EMAIL": "checkpoint@example.invalid",
            "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
            "LC_ALL": "C",
        }

    def git(self, *args: str) -> str:
        out = subprocess.run(["git", *args], cwd=self.work_tree, env=self.env, capture_output=True,
                             text=True)
        if out.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)} failed: {out.stderr.strip()}")
        return out.stdout

    def init(self) -> None:
        self.git("init", "-q", "--initial-branch", "main")
        self.git("config", "gc.auto", "0")
        self.git("config", "core.autocrlf", "false")
        self.git("config", "commit.gpgsign", "false")

    def checkpoint(self, message: str) -> tuple[str, float]:
        """`git add -A` + `git commit`; returns (commit id, seconds)."""
        t0 = time.perf_counter()
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "--no-verify", "-m", message)
        elapsed = time.perf_counter() - t0
        return self.git("rev-parse", "HEAD").strip(), elapsed

    def restore(self, commit: str) -> float:
        t0 = time.perf_counter()
        self.git("restore", f"--source={commit}", "--staged", "--worktree", "--", ".")
        self.git("clean", "-fdq")
        return time.perf_counter() - t0

    def gc(self) -> float:
        t0 = time.perf_counter()
        self.git("gc", "-q")
        return time.perf_counter() - t0

"""`turnback demo --agent AGENT`: a recorded agent session replayed through the real hook command.

The recording (turnback/hooks/recordings/AGENT/session.json) holds the agent's payloads in order and what the
agent did between them. Each payload goes to a `turnback hook AGENT` process, exactly as the agent
would send it; then the demo shows the session log, rewinds everything (the shell edit included,
which the agent's own checkpoints would miss), and redoes it, checking itself as it goes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..errors import InvalidParams
from .demo import Story, snapshot


def run_agent_demo(ctx, agent: str) -> int:
    from ..hooks import replay

    path = replay.fixture_path(agent)
    if not path.is_file():
        raise InvalidParams(f"no recorded session for {agent} ({path} is missing)")
    recording = replay.load(path)
    keep = ctx.args.keep
    base = Path(keep).absolute() if keep else Path(tempfile.mkdtemp(prefix="turnback-agent-demo-"))
    if keep and base.exists() and any(base.iterdir()):
        raise InvalidParams(f"--keep {keep}: the folder must be new or empty", data={"path": str(base)})
    root = base / "workspace"
    root.mkdir(parents=True, exist_ok=True)
    story = Story(ctx)
    try:
        ok = _run(story, recording, root, base / "agent", agent)
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)
    story.account.update({"workspace": str(root), "kept": bool(keep), "ok": ok, "agent": agent})
    if ctx.json:
        ctx.emit(story.account)
    else:
        passed = sum(c["ok"] for c in story.account["checks"])
        story.heading("Verdict")
        story.say(f"{passed}/{len(story.account['checks'])} checks hold. "
                  + ("The demo verified itself." if ok else "Something is wrong: see FAILED above."))
    return 0 if ok else 1


def _tb(root: Path, *args: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "turnback", *args, "--workspace", str(root), "--json"],
                          capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise InvalidParams(f"turnback {' '.join(args)} failed: {proc.stderr.strip()}")
    return json.loads(proc.stdout)


def _run(story: Story, recording: dict, root: Path, scratch: Path, agent: str) -> bool:
    from ..hooks import replay

    story.say(f"turnback demo --agent {agent}: a recorded {agent} session, through `turnback hook`",
              recording.get("description", ""), f"Scratch workspace: {root}")
    rep = replay.setup(recording, root, scratch)
    (root / "turnback.toml").write_text("# this workspace is one turnback knows\n")
    start = snapshot(root)
    replay.run(recording, rep, argv=[sys.executable, "-m", "turnback", "hook", agent])
    codes = [s.returncode for s in rep.sent]
    story.heading(f"{len(rep.sent)} hook events sent")
    story.check("every hook exited 0", all(c == 0 for c in codes), f"exit codes {sorted(set(codes))}")
    log = _tb(root, "log")
    for t in log["turns"]:
        story.say(f"turn {t['turn']} ({t['state']}): {t['prompt']!r}")
        for s in t["stepList"]:
            story.say(f"  {s['id']:<6} {s['kind']:<13} scope {s['scope']:<8} {s['summary'][:70]}")
        for g in t["gaps"]:
            story.say(f"  gap: {g['reason']} {g.get('detail', '')[:70]}")
    expected = recording.get("expect", {})
    story.check("one turn per prompt", len(log["turns"]) == expected.get("turns", len(log["turns"])))
    shell = [s for t in log["turns"] for s in t["stepList"] if s["kind"] == "shell"]
    story.check("shell steps are listed with their scopes", bool(shell),
                ", ".join(f"{s['id']} {s['scope']}" for s in shell))
    after = snapshot(root)
    story.check("the agent's files are as it left them", all(
        after.get(rel) == text.encode() for rel, text in expected.get("files", {}).items()))
    story.heading("Rewind before the first prompt")
    commit = _tb(root, "rewind", "--before-prompt", "1", "--yes")
    cand = commit["candidate"]
    story.say(cand["summary"])
    now = snapshot(root)
    story.check("the rewind committed", commit["commit"]["status"] == "committed")
    story.check("every file is back, shell edits included",
                {k: v for k, v in now.items() if k != "turnback.toml"}
                == {k: v for k, v in start.items() if k != "turnback.toml"})
    story.heading("Redo")
    groups = _tb(root, "redo")["groups"]
    newest = max(groups, key=lambda g: g["turnCount"]) if groups else None
    story.check("the rewound state is offered for Redo", newest is not None)
    if newest is not None:
        redo = _tb(root, "redo", "--head", str(newest["headSeq"]), "--yes")
        story.check("Redo brings it all back", redo["commit"]["status"] == "committed"
                    and snapshot(root) == after)
    story.account["hookLog"] = (root / ".turnback" / "agents" / "hook.log").read_text().splitlines() \
        if (root / ".turnback" / "agents" / "hook.log").exists() else []
    return all(c["ok"] for c in story.account["checks"])

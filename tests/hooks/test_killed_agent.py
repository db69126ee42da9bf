"""A turn whose agent was killed (SIGKILL, a closed terminal: no Stop, no SessionEnd, no interrupt
event) ends at once (issue 22, item 1): each hook records the agent's process (the hook's parent,
past the shell that runs the hook command), and a rewind that finds that process gone settles the
turn first, without waiting for the 2 minutes of silence. While the agent lives, the same turn is
still its work and the rewind refuses. Both ways a hook travels: mapped in the hook process, and
handed to the live owner (`turnback/hook/event` with `hookParent`)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import textwrap

import pytest
from agentkit import Hooked, record, workspace
from hookkit import TURNBACK, tb, tb_json

# An agent in miniature: a long-lived process that runs each hook command through `sh -c`, as the
# real agents do, one payload per line of its standard input, answering each with its exit status.
AGENT = textwrap.dedent("""
    import subprocess, sys
    command = sys.argv[1]
    for line in sys.stdin:
        proc = subprocess.run(["sh", "-c", command], input=line.encode(), capture_output=True)
        print(proc.returncode, flush=True)
""")


class AgentProcess(Hooked):
    """A Claude Code session whose hooks are run by a real agent process that can die."""

    def __init__(self, root, env):
        super().__init__(root)
        command = " ".join(shlex.quote(a) for a in TURNBACK + ["hook", "claude-code"])
        self.proc = subprocess.Popen([sys.executable, "-c", AGENT, command], cwd=root, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def send(self, event: str, **fields):
        self.proc.stdin.write(json.dumps(self.payload(event, **fields)) + "\n")
        self.proc.stdin.flush()
        return int(self.proc.stdout.readline()), "", ""

    def end(self) -> None:
        self.proc.stdin.close()
        assert self.proc.wait(60) == 0


@pytest.mark.parametrize("how", ["direct", "owner"])
def test_a_killed_agents_turn_is_settled_at_once(tmp_path, how):
    ws = workspace(tmp_path, {"a.txt": "one\n"})
    env = {**os.environ, "TURNBACK_HOOK_DIRECT": "1" if how == "direct" else "0"}
    if how == "owner":
        from turnback.remote import client

        client.ensure_owner(str(ws), str(ws / ".turnback"), timeout=60)
    agent = AgentProcess(ws, env)
    try:
        agent.prompt("first")
        agent.write("b.txt", "half\n")
        s = record(ws)["sessions"]["claude-code:s-1"]
        assert s["process"]["pid"] == agent.proc.pid, s.get("process")  # past the shell
        # the agent lives and sent an event a moment ago: it is still answering
        proc = tb(ws, "rewind", "--before-prompt", "1", "--json", check=False)
        assert proc.returncode != 0 and "turn-running" in proc.stderr, proc.stderr
        assert "its answer" in proc.stderr
        agent.end()  # killed mid-turn: nothing more comes, ever
        result = tb_json(ws, "rewind", "--before-prompt", "1", "--yes")
        first = result["candidate"]["settledFirst"]
        assert (first["turn"], first["status"]) == (1, "cancelled")
        assert first["why"] == "its agent's process has ended", first
        assert first["silentSeconds"] < 60
        assert result["commit"]["status"] == "committed"
        assert not (ws / "b.txt").exists() and (ws / "a.txt").read_text() == "one\n"
    finally:
        if agent.proc.poll() is None:
            agent.proc.kill()
            agent.proc.wait()
        if how == "owner":
            tb(ws, "daemon", "stop", check=False)


def test_a_reused_pid_is_gone_and_another_namespace_cannot_tell():
    """The record names a process by pid and start time: the same pid started later is another
    process (the agent is gone); a record made in another pid namespace (a container) says nothing
    here, so the silence rules apply instead of a wrong "gone"."""
    from turnback.agents.agentrecord import agent_process, process_gone, waiting_for

    me = agent_process(os.getpid())
    assert me is not None and me["pid"] == os.getpid()
    assert not process_gone(me)
    assert process_gone({**me, "start": str(int(me["start"]) + 1)})
    assert not process_gone({**me, "ns": "pid:[1]", "start": "0"})
    busy = {"active": 10**10, "process": {**me, "start": "0"}, "stopped": None}
    assert waiting_for(busy, now=10**10) == []  # the agent's process is gone: nothing to wait for
    assert waiting_for({**busy, "process": me}, now=10**10)[0]["what"] == "answer"

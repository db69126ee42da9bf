"""The third face: agent hooks (Claude Code, Codex, Gemini CLI, Copilot CLI) turned into the contract's
calls. `runtime` is the `turnback hook AGENT` command, `agents` reads each agent's payload, `mapper`
maps an event onto the session, `port` reaches it (the live sidecar's socket, or the store directly),
`config` holds the shell scope table, `install` edits the agents' settings files. docs/agents/.

The names below are what a hook's hand-over can come to, read by fast, reply, fallback, runtime and
drain alike: here, so that none of them imports another to learn them, and because a hook loads
this package anyway (a module of their own would add one to every hook's start-up).
"""

from __future__ import annotations

EXIT_OK, EXIT_BLOCK = 0, 2
ELSEWHERE = "other-workspace"  # the owner's error code: the payload's cwd is not in its workspace
NO_OWNER, OLDER_OWNER, OTHER_PLACE = "no-owner", "older-owner", "other-place"


class Missed:
    """The event did not reach an owner that answered: why, and whether its bytes were sent (then
    the owner may still record it, and the id it carries keeps it from being recorded twice)."""

    def __init__(self, why: str, sent: bool):
        self.why = why
        self.sent = sent

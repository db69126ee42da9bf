"""The third face: agent hooks (Claude Code, Codex, Gemini CLI, Copilot CLI) turned into the contract's
calls. `runtime` is the `turnback hook AGENT` command, `agents` reads each agent's payload, `mapper`
maps an event onto the session, `port` reaches it (the live sidecar's socket, or the store directly),
`config` holds the shell scope table, `install` edits the agents' settings files. docs/agents/.
"""

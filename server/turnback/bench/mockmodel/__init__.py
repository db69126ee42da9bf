"""A scripted model server on loopback for driving the real agent CLIs (Claude Code over the
Anthropic Messages API, Codex over the OpenAI Responses API): tests/agents_real and the
agent-hooks bench use it."""

from .script import Call, Reply, Script, call, say, tools
from .server import ModelServer, Request

__all__ = ["Call", "ModelServer", "Reply", "Request", "Script", "call", "say", "tools"]

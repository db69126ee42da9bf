"""The guard before the boundary: before a tool call whose effect would leave the machine, say so.

One call from the mapper's pre-tool path (`check`). The tool call's scope comes from the same rules
as its logged step (the shell scope table, hooks/tools.py); `[guard]` in turnback.toml says what to
do per scope: `allow` (nothing), `warn` (the person and the model are told, the call goes on), `ask`
(the agent asks the person first) or `deny`. What is said: that turnback cannot rewind this call, and
what the last checkpoint holds (the running turn's start, and the files it changed so far).

Each agent answers in its own words (docs/agents/README.md, "The guard"):

* Claude Code (and VS Code's agent mode): `hookSpecificOutput.permissionDecision` `ask`/`deny` with
  `permissionDecisionReason`. Claude Code lets an `ask` through unasked in `bypassPermissions` and
  `dontAsk` modes, so there the ask becomes a *deny once* (below);
* Copilot CLI: `permissionDecision` `ask`/`deny` with `permissionDecisionReason`, at the top level;
* Cursor: `permission` `ask`/`deny` with `user_message` and `agent_message`, on
  `beforeShellExecution` and `beforeMCPExecution` (its `preToolUse` of the same call says nothing);
* Codex (its PreToolUse parses `ask` but does not support it, and lets the call through) and Gemini CLI
  (`decision` is `allow` or `deny` only): an `ask` is a *deny once*: the call is refused with a reason
  that tells the model to ask the person, and the same call made again within `RETRY_SECONDS` passes.

A warning is a `systemMessage` (and `additionalContext` for the model where the agent reads it on a
pre-tool event); Copilot CLI and Cursor have no channel for one, so a warning there is only logged.
"""

from __future__ import annotations

import hashlib
import json
import time

RETRY_SECONDS = 600  # a call refused "until the person agreed" passes when made again within this
ASK_UNSUPPORTED = ("codex", "gemini")
# Cursor reads a permission only on these events (its preToolUse of the same call says nothing)
CURSOR_ASKS = ("beforeShellExecution", "beforeMCPExecution")
UNASKED_MODES = ("bypassPermissions", "dontAsk")  # Claude Code answers an "ask" without asking
# Agents with no channel for a warning on a pre-tool event: Copilot reads only a permission, and
# Cursor's only other answer than ask or deny is "allow", which would skip its own approval.
QUIET = ("copilot", "cursor")


def scope_of(use, config) -> tuple[str, str]:
    """(scope, why) of a tool call, by the rules its logged step will have."""
    if use.group == "shell":
        return config.shell_scope(use.command or "")
    if use.restorable:
        return "host", "a file tool: turnback captures and restores its files"
    return use.scope or "unknown", f"{use.group} tool"


def check(mapper, s: dict, use) -> str:
    """Decide, and set what the hook prints (`mapper.reply.guard`). Returns the action taken:
    `allow`, `warn`, `ask` or `deny` (the agent will not run the call: nothing to record)."""
    ev, config = mapper.ev, mapper.config
    if ev.agent == "cursor" and ev.name not in CURSOR_ASKS:
        return "allow"
    scope, why = scope_of(use, config)
    action = config.guard.get(scope, "allow")
    if action == "allow" or (action == "warn" and ev.agent in QUIET):
        return "allow" if action == "allow" else _quiet_warning(mapper, use, scope)
    key = _call_key(ev)
    asked = s.setdefault("guarded", {})
    now = time.time()
    for old in [k for k, t in asked.items() if now - t > RETRY_SECONDS]:
        del asked[old]
    once = action == "ask" and (ev.agent in ASK_UNSUPPORTED or
                                getattr(ev, "permission_mode", None) in UNASKED_MODES)
    if once and key in asked:
        del asked[key]
        mapper.log(f"{mapper.key}: guard: {use.summary} made again after the question: let through")
        return "allow"
    text = explain(mapper, s, use, scope, why)
    if once:
        asked[key] = now
        text += (" Ask the person whether to go ahead, and make this same call again only if they "
                 "agree (turnback lets it through once then).")
    mapper.reply.guard = {"action": "deny" if once else action, "reason": text, "asked": once}
    mapper.log(f"{mapper.key}: guard: {use.summary}: scope {scope} -> {action}"
               + (" (as a refusal the model must ask about)" if once else ""))
    return "deny" if (once or action == "deny") else action


def _quiet_warning(mapper, use, scope: str) -> str:
    """An agent that reads no warning from a pre-tool hook: the warning goes to the hook log."""
    mapper.log(f"{mapper.key}: guard: {use.summary}: scope {scope} -> warn ({mapper.ev.agent} reads "
               "no warning from this hook: logged only)")
    return "warn"


def explain(mapper, s: dict, use, scope: str, why: str) -> str:
    what = "leaves this machine" if scope == "crossing" else "may leave this machine"
    text = (f"turnback cannot rewind this: {use.summary} {what} (scope {scope}: {why}). "
            + checkpoint_words(mapper, s))
    return text


def checkpoint_words(mapper, s: dict) -> str:
    """What the last checkpoint holds: the start of the running turn and what it changed so far."""
    n = s.get("turn")
    if n is None:
        return "No turn is running, so the last checkpoint is the end of the last turn."
    try:
        # One turn, not the whole log (888 KiB at 300 turns, past the loop's 10 ms); an older
        # owner ignores `turn` and sends the whole log, where the turn is found all the same.
        log = mapper.port.call("turnback/session/log", {"turn": n})
    except Exception as exc:  # noqa: BLE001 - the question goes out without the detail
        mapper.log(f"guard: could not read the session for the checkpoint ({exc})")
        return f"The last checkpoint is the start of turn {n}."
    turn = next((t for t in log.get("turns", []) if t.get("turn") == n), {})
    files = sorted(f.get("path") or f.get("uri") for f in turn.get("files", []))
    prompt = " ".join((turn.get("prompt") or "").split())[:60]
    where = f"the start of turn {n}" + (f" (prompt \u201c{prompt}\u201d)" if prompt else "")
    if not files:
        return (f"The last checkpoint is {where}; this turn has changed no file yet, and a rewind "
                "would not take back what this call sends.")
    shown = ", ".join(files[:6]) + ("…" if len(files) > 6 else "")
    return (f"The last checkpoint is {where}: a rewind there puts back the {len(files)} file(s) this "
            f"turn changed ({shown}), but not what this call sends.")


def output(ev, guard: dict) -> dict:
    """What the hook prints for a guard decision, in the agent's own shape."""
    action, reason = guard["action"], guard["reason"]
    if ev.agent == "copilot":
        return {"permissionDecision": action, "permissionDecisionReason": reason}
    if ev.agent == "cursor":  # both spellings: older versions read userMessage and agentMessage
        return {"permission": action, "user_message": reason, "agent_message": reason,
                "userMessage": reason, "agentMessage": reason}
    if ev.agent == "gemini":
        if action == "warn":
            return {"systemMessage": "turnback: " + reason}
        return {"decision": "deny", "reason": reason, "systemMessage": "turnback: " + reason}
    out = {"systemMessage": "turnback: " + reason}
    specific = {"hookEventName": ev.name}
    if action == "warn":
        if ev.agent == "codex":  # its pre-tool hooks take no context: a message alone
            return out
        specific["additionalContext"] = reason
    else:
        specific.update(permissionDecision=action, permissionDecisionReason=reason)
    out["hookSpecificOutput"] = specific
    return out


def _call_key(ev) -> str:
    canon = json.dumps([ev.agent, ev.session, ev.tool, ev.tool_input], sort_keys=True, default=str)
    return hashlib.sha256(canon.encode()).hexdigest()[:24]

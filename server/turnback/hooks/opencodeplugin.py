"""turnback's plugin for OpenCode (docs/agents/opencode.md): OpenCode has no hook commands, it loads
JavaScript plugins from `.opencode/plugin/` (the project) or `~/.config/opencode/plugin/` (the
user). `hooks install opencode` writes one there that hands each event to `turnback hook opencode`
as the other agents' hooks do (one JSON payload on standard input, Claude Code's field names), and
gives the notice of a rewind back to the model as a part of the next prompt.

The plugin never throws into OpenCode and never waits more than its timeout: a turnback that is
gone or slow costs the agent that long once per event, and nothing else. Events reach turnback in
the order OpenCode produced them (one queue), so a tool's before-images are taken before it runs.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..store import fs
from .configdir import prepare_parent

NAME = "turnback.js"
MARK = "// turnback-plugin v1"
TIMEOUT_MS = 30_000

PLUGIN = MARK + """ (written by `turnback hooks install opencode`; reinstalling rewrites it,
// `turnback hooks uninstall opencode` removes it)
import { spawn } from "node:child_process";

const COMMAND = __COMMAND__;
const TIMEOUT_MS = __TIMEOUT__;

function run(payload) {
  return new Promise((resolve) => {
    let out = "";
    let child;
    const done = (value) => { clearTimeout(timer); resolve(value); };
    const timer = setTimeout(() => { try { child.kill("SIGKILL"); } catch {} done(null); }, TIMEOUT_MS);
    try {
      child = spawn(COMMAND, { shell: true, stdio: ["pipe", "pipe", "ignore"] });
      child.on("error", () => done(null));
      child.stdout.on("data", (chunk) => { out += chunk; });
      child.on("close", () => { try { done(JSON.parse(out)); } catch { done(null); } });
      child.stdin.on("error", () => {});
      child.stdin.end(JSON.stringify(payload));
    } catch { done(null); }
  });
}

export const Turnback = async ({ directory }) => {
  let queue = Promise.resolve();
  const roles = new Map();     // message id -> role
  const answers = new Map();   // session id -> {message, parts: Map(part id -> text)}
  let current = null;          // the session that ran last (file.edited names none)
  const send = (event, sessionID, fields) => {
    const payload = { hook_event_name: event, session_id: sessionID, cwd: directory, ...fields };
    const result = queue.then(() => run(payload));
    queue = result.catch(() => null);
    return result.catch(() => null);
  };
  const context = (result) => result?.hookSpecificOutput?.additionalContext;
  return {
    "chat.message": async (input, output) => {
      try {
        const parts = output?.parts ?? [];
        const prompt = parts.filter((p) => p?.type === "text" && !p.synthetic)
          .map((p) => p.text).join("\\n");
        answers.delete(input.sessionID);
        current = input.sessionID;
        const extra = context(await send("UserPromptSubmit", input.sessionID,
          { prompt, prompt_id: output?.message?.id ?? input.messageID }));
        if (typeof extra === "string" && extra && parts.length) {
          parts.push({ ...parts[parts.length - 1], id: parts[parts.length - 1].id + "tb",
                       type: "text", text: extra, synthetic: true });
        }
      } catch {}
    },
    "tool.execute.before": async (input, output) => {
      try {
        await send("PreToolUse", input.sessionID,
          { tool_name: input.tool, tool_use_id: input.callID, tool_input: output?.args ?? {} });
      } catch {}
    },
    "tool.execute.after": async (input, output) => {
      try {
        await send("PostToolUse", input.sessionID,
          { tool_name: input.tool, tool_use_id: input.callID, tool_input: input.args ?? {},
            tool_response: { title: output?.title, output: output?.output,
                             metadata: output?.metadata } });
      } catch {}
    },
    event: async ({ event }) => {
      try {
        const p = event?.properties ?? {};
        switch (event?.type) {
          case "session.created":
            if (!p.info?.parentID) await send("SessionStart", p.info?.id, { source: "startup" });
            break;
          case "message.updated":
            if (p.info?.id) roles.set(p.info.id, p.info.role);
            break;
          case "message.part.updated": {
            const part = p.part;
            if (part?.type === "text" && !part.synthetic && roles.get(part.messageID) === "assistant") {
              let a = answers.get(part.sessionID);
              if (!a || a.message !== part.messageID) {
                a = { message: part.messageID, parts: new Map() };
                answers.set(part.sessionID, a);
              }
              a.parts.set(part.id, part.text ?? "");
            }
            break;
          }
          case "session.idle": {
            const a = answers.get(p.sessionID);
            answers.delete(p.sessionID);
            await send("Stop", p.sessionID,
              { last_assistant_message: a ? [...a.parts.values()].join("") : null });
            break;
          }
          case "session.error":
            await send("StopFailure", p.sessionID,
              { error: p.error?.name ?? "error", error_details: p.error?.data?.message ?? null });
            break;
          case "file.edited":
            if (current) await send("FileEdited", current, { file_path: p.file });
            break;
          case "message.removed":
            await send("MessageRemoved", p.sessionID, { message_id: p.messageID });
            break;
          case "session.deleted":
            await send("SessionEnd", p.info?.id, { reason: "deleted" });
            break;
        }
      } catch {}
    },
  };
};
"""


def plugin_dir(scope: str, root: Path) -> Path:
    if scope == "user":
        base = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
        return Path(base) / "opencode" / "plugin"
    return root / ".opencode" / "plugin"


def render(command: str) -> str:
    return (PLUGIN.replace("__COMMAND__", json.dumps(command))
            .replace("__TIMEOUT__", str(TIMEOUT_MS)))


def installed_command(text: str) -> str | None:
    """The command a plugin file of ours runs, or None when it is not ours."""
    if not text.startswith(MARK):
        return None
    for line in text.splitlines():
        if line.startswith("const COMMAND = "):
            try:
                return json.loads(line[len("const COMMAND = "):].rstrip(";"))
            except ValueError:
                return None
    return None


def state(path: Path, command: str | None = None) -> dict:
    """What is at `path`: absent, ours (current, or edited since), or someone else's file."""
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return {"exists": False}
    except (OSError, UnicodeDecodeError) as exc:
        return {"exists": True, "problem": f"cannot read {path} ({exc})"}
    ours = installed_command(text)
    if ours is None:
        return {"exists": True, "ours": False}
    return {"exists": True, "ours": True, "command": ours,
            "edited": text != render(ours), "current": command is None or ours == command}


def write(path: Path, command: str, scope: str, root: Path) -> None:
    prepare_parent(path, scope, root)
    fs.write_atomic(path, render(command).encode(), mode=0o644)

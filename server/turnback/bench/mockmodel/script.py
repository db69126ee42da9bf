"""What the scripted model does: for each prompt, the replies it gives one after another.

A scripted turn is keyed by its prompt. Each reply is either tool calls (the agent runs them and
asks again with their results) or an answer. Which reply a request gets is read from the
conversation the agent sends, not from a counter kept here: the latest user message that is a
scripted prompt names the turn, and the replies after it say how far that turn got (tool call ids
carry the turn and reply number too, for whoever reads the logs). So a resumed, rewound or forked
conversation gets the reply its own history calls for, and two agents (or a helper and its parent)
can share one server.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Call:
    name: str
    input: dict
    # the Responses API has two shapes of tool call: JSON arguments (function_call) and free text
    # (custom_tool_call, Codex's apply_patch); the Messages API has only tool_use
    freeform: bool = False
    namespace: str | None = None  # a Responses tool inside a namespace (Codex's collaboration tools)


@dataclass
class Reply:
    calls: list[Call] = field(default_factory=list)
    text: str | None = None
    hang: bool = False  # start the answer, then hold it until the agent is killed or the server stops
    error: tuple[int, str, str] | None = None  # (HTTP status, error type, message)


def say(text: str) -> Reply:
    return Reply(text=text)


def call(name: str, /, freeform: bool = False, namespace: str | None = None, **input) -> Call:
    return Call(name, input, freeform, namespace)


def tools(*calls: Call, text: str | None = None) -> Reply:
    return Reply(calls=list(calls), text=text)


@dataclass
class Item:
    """One element of a conversation, whatever API carried it."""
    role: str  # user | assistant
    kind: str  # text | call | result
    text: str = ""
    call_id: str = ""
    name: str = ""
    msg: int = 0  # which message of the conversation it came in


@dataclass
class Choice:
    prompt: str | None  # the scripted prompt this request continues (None: not a scripted turn)
    turn: int
    step: int
    reply: Reply


class Script:
    def __init__(self, turns: dict[str, list[Reply]] | None = None):
        self.turns: dict[str, list[Reply]] = {}
        for prompt, replies in (turns or {}).items():
            self.add(prompt, replies)

    def add(self, prompt: str, replies: list[Reply]) -> None:
        self.turns[prompt] = list(replies)

    def choose(self, convo: list[Item]) -> Choice:
        keys = list(self.turns)
        at, turn = _last_prompt(convo, keys)
        if turn is None:
            return Choice(None, -1, 0, say("(no scripted turn matches this conversation)"))
        step = _replies_since(convo[at + 1:])
        replies = self.turns[keys[turn]]
        if step >= len(replies):
            return Choice(keys[turn], turn, step, say(f"(turn {turn + 1} has no reply {step + 1})"))
        return Choice(keys[turn], turn, step, replies[step])


def _replies_since(items: list[Item]) -> int:
    """How many replies the model gave after the prompt: runs of assistant items (one reply is one
    assistant message, or one run of output items; a tool result, a hook's feedback or a
    notification in between starts the next)."""
    runs, inside = 0, False
    for item in items:
        if item.role == "assistant":
            runs += not inside
            inside = True
        elif item.role == "user":
            inside = False
    return runs


def _last_prompt(convo: list[Item], keys: list[str]) -> tuple[int, int | None]:
    """The latest user message holding a scripted prompt. Within that message a text that is the
    prompt (quotes aside: `opencode run` quotes it) wins over one that ends with a prompt (an agent
    may put a hook's context in front of it, in the same text: Gemini CLI does), which wins over
    one that only contains a prompt (a rewind notice may quote an older one); of the prompts a text
    only contains, the first in it (Copilot CLI puts a hook's context after the prompt, and the
    notice quotes older prompts)."""
    best: tuple[tuple[int, int], int, int] | None = None  # ((rank, -position), at, key)
    for at in range(len(convo) - 1, -1, -1):
        item = convo[at]
        if best is not None and item.msg != convo[best[1]].msg:
            break
        if item.role != "user" or item.kind != "text":
            continue
        text = item.text.strip()
        bare = text.strip("\"'")
        for i, key in enumerate(keys):
            rank = (3 if key in (text, bare) else 2 if bare.endswith(key) else
                    1 if key in text else 0)
            score = (rank, -text.find(key) if rank == 1 else 0)
            if rank and (best is None or score > best[0]):
                best = (score, at, i)
    return (best[1], best[2]) if best is not None else (-1, None)


def call_id(prefix: str, turn: int, step: int, index: int) -> str:
    return f"{prefix}tb{turn}_{step}_{index}"

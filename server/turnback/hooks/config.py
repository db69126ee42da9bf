"""The hook configuration: the shell scope table and how hooks behave, from shipped defaults and files.

Files, later ones winning: the shipped defaults below, the workspace's `turnback.toml` (meant to be
shared with the team), then the store's `.turnback/config.toml` (this machine only). Both files use
the same tables (docs/agents/README.md):

    [shell]
    none = ["make lint"]          # read-only: no effect at all
    host = ["make fmt"]           # changes files here only (the sweep captures them)
    crossing = ["./deploy.sh"]    # leaves the machine
    defaults = true               # false drops the shipped rules below

    [hooks]
    block = false                 # true: a turnback failure blocks the agent's action (exit 2)
    start_owner = true            # a hook that finds no live sidecar starts a background one
    resume_wait = 0.25            # seconds a Stop waits for the turn's last transcript record
    after-rewind = "./scripts/reset-todo.sh"   # run after a committed rewind, restore, Redo, fork
    after-rewind-timeout = 10     # seconds before that command is stopped

    [guard]                       # before a tool call of that scope: allow, warn, ask or deny
    crossing = "ask"              # (hooks/guard.py; the defaults are DEFAULT_GUARD below)
    unknown = "warn"

A rule is a command prefix, compared word by word (`git push` matches `git push origin main`, not
`git pushy`). The longest matching rule wins; a file's rule beats a shipped one of the same length.
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from ..errors import TurnbackError

# Read-only commands and test runners: they change nothing a rewind could restore.
DEFAULT_NONE = (
    "ls", "cat", "head", "tail", "less", "more", "wc", "pwd", "echo", "printf", "which", "type",
    "file", "stat", "du", "df", "tree", "find", "grep", "egrep", "rg", "ag", "fd", "diff", "cmp",
    "sort", "uniq", "cut", "tr", "jq", "env", "date", "whoami", "uname", "id", "true", "sleep",
    "git status", "git diff", "git log", "git show", "git blame", "git branch --list",
    "git rev-parse", "git ls-files", "git grep",
    "pytest", "python -m pytest", "python3 -m pytest", "tox", "nox", "cargo test", "cargo check",
    "go test", "go vet", "npm test", "npm run test", "yarn test", "pnpm test", "make test",
    "mypy", "ruff check", "eslint", "tsc --noEmit",
)
# Commands whose effect leaves the machine: a rewind cannot take them back.
DEFAULT_CROSSING = (
    "git push", "npm publish", "yarn publish", "pnpm publish", "cargo publish", "twine upload",
    "gh pr create", "gh pr merge", "gh pr comment", "gh issue create", "gh issue comment",
    "gh release create", "gh api", "curl -X POST", "curl -X PUT", "curl -X PATCH",
    "curl -X DELETE", "curl --data", "curl -d", "curl -F", "curl --request POST",
    "wget --post-data", "scp", "rsync", "ssh", "docker push", "kubectl apply", "kubectl delete",
    "terraform apply", "aws", "gcloud", "az",
)
SCOPE_ORDER = {"none": 0, "host": 1, "unknown": 2, "crossing": 3}  # worst wins in a pipeline
# Claude Code writes its transcript in batches flushed every second (its writer's flushIntervalMs),
# so at a Stop the turn's last record is often a second away. A Stop waits only a glance for it (a
# second on every turn's end would be felt); the rest is found later, exactly (docs/agents/README.md).
RESUME_WAIT = 0.25
GUARD_ACTIONS = ("allow", "warn", "ask", "deny")
# What the pre-tool guard does per scope unless turnback.toml says otherwise (docs/agents/README.md,
# "The guard"): warn before what leaves the machine, never stop the agent unless told to, and say
# nothing about the rest.
DEFAULT_GUARD = {"crossing": "warn", "unknown": "allow", "host": "allow", "none": "allow"}
AFTER_REWIND_TIMEOUT = 10.0  # seconds
_SEPARATORS = re.compile(r"\s*(?:&&|\|\||;|\||\n)\s*")
_REDIRECT = re.compile(r"(?<![0-9&])>{1,2}(?!&)|\btee\b")
_DEV_NULL = re.compile(r"[0-9&]?>{1,2}\s*/dev/null")
_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_WRAPPERS = ("sudo", "command", "nice", "time", "nohup")


class Rule:
    def __init__(self, words: tuple[str, ...], scope: str, source: str):
        self.words = words
        self.scope = scope
        self.source = source  # "default" or the file it came from

    def matches(self, words: list[str]) -> bool:
        return tuple(words[: len(self.words)]) == self.words


class HookConfig:
    def __init__(self, rules: list[Rule] | None = None):
        self.rules = list(rules or [])
        self.block = False
        self.start_owner = True
        self.resume_wait = RESUME_WAIT
        self.files: list[str] = []  # the files that were read
        self.problems: list[str] = []  # what could not be read, for the log
        self.errors: list[str] = []  # what was read but names something unknown (`bad-config`)
        self.guard = dict(DEFAULT_GUARD)
        self.guard_source = {scope: "default" for scope in DEFAULT_GUARD}
        self.after_rewind: str | None = None
        self.after_rewind_timeout = AFTER_REWIND_TIMEOUT

    def shell_scope(self, command: str) -> tuple[str, str]:
        """The scope of a shell command line and why: each part of a pipeline or `&&` chain is
        matched on its own and the widest scope wins; output redirected into a file is never
        `none` (it wrote something), and anything unmatched is `unknown`."""
        if not isinstance(command, str) or not command.strip():
            return "unknown", "no command"
        worst, why = None, []
        for part in _SEPARATORS.split(command.strip()):
            if not part:
                continue
            scope, reason = self._part_scope(part)
            why.append(reason)
            if worst is None or SCOPE_ORDER[scope] > SCOPE_ORDER[worst]:
                worst = scope
        return worst or "unknown", "; ".join(why)

    def shell_writes(self, command: str) -> list[str]:
        """The workspace files a command line writes by redirection (`>`, `>>`, `tee`), as the
        relative paths it names: the parts whose scope is `host` for that reason alone."""
        if not isinstance(command, str):
            return []
        out: list[str] = []
        for part in _SEPARATORS.split(command.strip()):
            if part and self._part_scope(part)[0] == "host":
                out += [t for t in redirect_targets(part) if _stays_here(t) and t not in out]
        return out

    def _part_scope(self, part: str) -> tuple[str, str]:
        try:
            words = shlex.split(part, comments=True)
        except ValueError:
            words = part.split()
        while words and (_ENV_ASSIGNMENT.match(words[0]) or words[0] in _WRAPPERS):
            words = words[1:]
        if not words:
            return "unknown", f"{part!r}: nothing to match"
        if words[0] == "tee":  # the end of a pipeline that writes what it reads into files
            targets = redirect_targets(part)
            if targets and all(_stays_here(t) for t in targets):
                return "host", f"'tee' writes {', '.join(targets)} in the workspace (the sweep captures it)"
            return "unknown", "'tee' writes outside the workspace, or to files it does not name"
        # `/usr/bin/git push` is `git push`; a rule may also name the path itself (`./deploy.sh`)
        forms = [words, [os.path.basename(words[0])] + words[1:]]
        best = None
        for rule in self.rules:
            if any(rule.matches(f) for f in forms) and (best is None or len(rule.words) > len(best.words)
                                        or (len(rule.words) == len(best.words)
                                            and best.source == "default")):
                best = rule
        if best is None:
            return "unknown", f"{words[0]!r}: no rule"
        scope = best.scope
        if scope == "none" and _REDIRECT.search(_DEV_NULL.sub("", part)):
            # It wrote a file. Into the workspace (a relative path that does not climb out): a host
            # change the sweep captures and a rewind puts back; anywhere else: unknown.
            targets = redirect_targets(part)
            if targets and all(_stays_here(t) for t in targets):
                return "host", (f"{' '.join(best.words)!r} writes {', '.join(targets)} in the "
                                "workspace (the sweep captures it)")
            return "unknown", f"{' '.join(best.words)!r} writes its output to a file"
        return scope, f"{' '.join(best.words)!r} -> {scope} ({best.source})"


def redirect_targets(part: str) -> list[str]:
    """The files one command writes through `>`, `>>` or `tee` (empty when they cannot be told)."""
    try:
        lex = shlex.shlex(_DEV_NULL.sub("", part), posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        words = list(lex)
    except ValueError:
        return []
    out = [words[i + 1] for i, w in enumerate(words[:-1]) if w in (">", ">>")]
    if words and words[0] == "tee":
        out += [w for w in words[1:] if not w.startswith("-")]
    return out


def _stays_here(target: str) -> bool:
    """A path relative to the agent's folder that never climbs out of it: inside the workspace."""
    return bool(target) and not target.startswith(("/", "~", "$", "-")) and \
        ".." not in Path(target).parts and not any(c in target for c in "*?`")


def _rules(words_list, scope: str, source: str) -> list[Rule]:
    out = []
    for text in words_list:
        if isinstance(text, str) and text.split():
            out.append(Rule(tuple(text.split()), scope, source))
    return out


def defaults() -> list[Rule]:
    return _rules(DEFAULT_NONE, "none", "default") + _rules(DEFAULT_CROSSING, "crossing", "default")


def config_files(workspace: Path, store: Path | None = None) -> list[Path]:
    store = store or workspace / ".turnback"
    return [workspace / "turnback.toml", store / "config.toml"]


def load(workspace: Path, store: Path | None = None) -> HookConfig:
    """The configuration in force for a workspace. A file that cannot be read or parsed is skipped
    and named in `problems` (the hook logs it); it never stops a hook."""
    config = HookConfig(rules=defaults())
    for path in config_files(workspace, store):
        try:
            raw = _read_trusted(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            config.problems.append(f"{path}: {exc.strerror or exc}")
            continue
        except TurnbackError as exc:  # untrusted: skipped, never obeyed
            config.problems.append(exc.message)
            continue
        if not raw.strip():
            config.files.append(str(path))
            continue
        try:
            data = _parse_toml(raw)
        except Exception as exc:  # tomllib.TOMLDecodeError, or tomli's
            config.problems.append(f"{path}: not valid TOML ({exc})")
            continue
        config.files.append(str(path))
        shell = data.get("shell") if isinstance(data.get("shell"), dict) else {}
        if shell.get("defaults") is False:
            config.rules = [r for r in config.rules if r.source != "default"]
        for scope in ("none", "host", "crossing", "unknown"):
            values = shell.get(scope, [])
            if not isinstance(values, list):
                config.problems.append(f"{path}: [shell] {scope} must be a list of commands")
                continue
            config.rules.extend(_rules(values, scope, str(path)))
        hooks = data.get("hooks") if isinstance(data.get("hooks"), dict) else {}
        if isinstance(hooks.get("block"), bool):
            config.block = hooks["block"]
        if isinstance(hooks.get("start_owner"), bool):
            config.start_owner = hooks["start_owner"]
        wait = hooks.get("resume_wait")
        if isinstance(wait, (int, float)) and not isinstance(wait, bool) and 0 <= wait <= 10:
            config.resume_wait = float(wait)
        elif wait is not None:
            config.problems.append(f"{path}: [hooks] resume_wait must be a number of seconds, 0 to 10")
        _after_rewind(config, hooks, path)
        _guard(config, data.get("guard"), path)
    return config


def _read_trusted(path: Path) -> bytes:
    """The file's bytes, read without following a link, when it is the user's own and nobody
    else may write it; `untrusted` otherwise (a planted `block = true` is never obeyed)."""
    from ..store import fs, trust

    fd = fs.open_read(path)
    try:
        trust.require_fd(fd, path, "configuration", private=False)
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _bad(config: HookConfig, text: str) -> None:
    config.errors.append(text)
    config.problems.append(text)


def _after_rewind(config: HookConfig, hooks: dict, path: Path) -> None:
    for dashed in ("after-rewind", "after-rewind-timeout"):  # start_owner's spelling works too
        if dashed.replace("-", "_") in hooks and dashed not in hooks:
            hooks = dict(hooks, **{dashed: hooks[dashed.replace("-", "_")]})
    if "after-rewind" in hooks:
        command = hooks["after-rewind"]
        if isinstance(command, str):
            config.after_rewind = command.strip() or None
        else:
            _bad(config, f"{path}: [hooks] after-rewind must be a command line (a string)")
    if "after-rewind-timeout" in hooks:
        limit = hooks["after-rewind-timeout"]
        if isinstance(limit, (int, float)) and not isinstance(limit, bool) and 0 < limit <= 3600:
            config.after_rewind_timeout = float(limit)
        else:
            _bad(config, f"{path}: [hooks] after-rewind-timeout must be a number of seconds "
                         "between 0 and 3600")


def _guard(config: HookConfig, table, path: Path) -> None:
    """`[guard]`: scope = action. A scope or an action turnback does not know is a `bad-config`
    error, named with the file; the entry is ignored (the hook goes on with the rest)."""
    if table is None:
        return
    if not isinstance(table, dict):
        _bad(config, f"{path}: [guard] must be a table of scope = action")
        return
    for scope, action in table.items():
        if scope not in SCOPE_ORDER:
            _bad(config, f"{path}: [guard] names an unknown scope {scope!r}; the scopes are "
                         + ", ".join(SCOPE_ORDER))
        elif action not in GUARD_ACTIONS:
            _bad(config, f"{path}: [guard] {scope} = {action!r} is not one of "
                         + ", ".join(GUARD_ACTIONS))
        else:
            config.guard[scope] = action
            config.guard_source[scope] = str(path)


def _parse_toml(raw: bytes) -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    return tomllib.loads(raw.decode("utf-8"))

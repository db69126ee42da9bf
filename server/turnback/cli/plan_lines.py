"""Lines of text shared by the plans the command line prints (rewind, Redo, fork, restore): pure
functions from the contract's dicts to words, re-exported by `render.py`."""

from __future__ import annotations


def short(digest) -> str:
    """A digest as a person reads it: eight characters, or what it means when it is not one."""
    if digest is None:
        return "unknown"
    if digest == "absent":
        return "(absent)"
    return str(digest)[:8]


def clip(text: str | None, n: int = 70) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= n else text[: n - 1] + "…"


def closing_lines(c: dict, attempts: str, cleared_words: str,
                  names: dict[str, str] | None = None) -> list[str]:
    """The directives (by their text when `names` has it), the workflow and the summary at the end
    of a rewind's or a fork's plan."""
    out = [f"Directive {directive_name(d.get('id'), names)}: {d.get('attemptsDiscarded')} "
           f"{attempts} {d.get('stateAfter')}" for d in c.get("directives", [])]
    cleared = {k: v for k, v in (c.get("workflowCleared") or {}).items() if v}
    if cleared:
        out.append(f"{cleared_words}: " + ", ".join(f"{v} {k}" for k, v in cleared.items()))
    if c.get("summary"):
        out.append("In short: " + c["summary"])
    return out


def directive_name(did, names: dict[str, str] | None) -> str:
    name = (names or {}).get(did)
    return f"\u201c{clip(name, 60)}\u201d" if name else str(did)


def kept_turns(keep: dict, none: str) -> str:
    """`  3 turn(s), up to turn 3: “…”`: the turns a rewind or fork keeps."""
    if not keep.get("turnCount"):
        return f"  {none}"
    last = keep["last"]
    return (f"  {keep['turnCount']} turn(s), up to turn {last['turn']}: "
            f"\u201c{clip(last.get('prompt'), 60)}\u201d")


def later_turns(part: dict, what: str, none: str) -> str:
    """`  2 turn(s), from turn 4: “…”, with their answers`: the turns after the boundary."""
    if not part.get("turnCount"):
        return f"  {none}"
    first = part["first"]
    return (f"  {part['turnCount']} {what}, from turn {first['turn']}: "
            f"\u201c{clip(first.get('prompt'), 60)}\u201d, with their answers")


def mode_text(bits) -> str:
    return "?" if not isinstance(bits, int) else f"{bits:o}"


def mode_note(f: dict) -> str:
    """What one FilePlan entry changes in the permission bits, in words ("" when they stay): the
    plan names files by action and path, never by digest; a change of bits alone says so."""
    bits = f.get("fromMode"), f.get("mode")
    if f.get("action") == "delete" or None in bits or bits[0] == bits[1]:
        return ""
    text = f"mode {mode_text(bits[0])} -> {mode_text(bits[1])}"
    return text + (" (same bytes)" if f.get("from") == f.get("to") else "")

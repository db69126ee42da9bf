"""Human-readable rendering of what the workbench returns: a log, a candidate, a redo plan, a report.

Pure functions from the contract's result dicts to lines of text; nothing here reads the disk or the
store. `--json` bypasses this module entirely and prints the result dicts as they are.
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from ..travel.plan_words import boundary_words  # noqa: F401 - standard library only (restore_cmd.py)
from .plan_lines import clip, closing_lines, kept_turns, later_turns, mode_note, short  # noqa: F401

# The words of gaps, effects and kept edits are imported where a line needs them: `travel.user_edits`
# alone brings the model, the object store and zstandard (about 15 ms cached, 40 ms not), which a
# command through the owner does not need to print most answers (tests/cli/test_lean_imports.py).
def __getattr__(name: str):
    if name == "GAP_TEXT":  # the words every client shows (model/gaps.py)
        from ..model.gaps import GAP_WORDS
        return GAP_WORDS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def keep_words(f: dict) -> str:
    from ..travel.user_edits import keep_words as words
    return words(f)


def shown_buckets(effects: dict):
    if not any(effects.values()):  # no step in any bucket: nothing shown, nothing imported
        return []
    from ..effects.words import shown_buckets as shown
    return shown(effects)


ACTION_TEXT = {"restore": "restore", "delete": "delete", "unchanged": "keep", "kept": "keep"}
FORK_ACTION_TEXT = {"restore": "put back", "delete": "remove", "unchanged": "keep"}
MODE_TEXT = {"files": "Files only: every turn of the conversation stays.",
             "conversation": "Conversation only: every file stays as it is now."}

# Who made a user edit (FilePlan.userEditBy), in words.
USER_EDIT_TEXT = {"editor-save": "saved in the editor", "disk-change": "changed on disk",
                  "capture-request": "captured between turns",
                  "uncaptured": "changed on disk, not captured yet",
                  "restore": "put back by turnback restore",
                  "kept-on-rewind": "kept by a conversation-only rewind"}

# Why a collection kept a head (collect/retention.py), in words, most important first.
KEPT_TEXT = {"current": "the current state", "group": "Redo state(s)", "recent": "newest state(s)",
             "young": "state(s) younger than the grace period"}


def size(n) -> str:
    """A byte count as a person reads it."""
    n = int(n or 0)
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def when(ts) -> str:
    if not isinstance(ts, (int, float)):
        return "?"
    import time  # not datetime: a module the usual command does not import
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


class Renderer:
    """Turns URIs back into workspace paths for display."""

    def __init__(self, root_uri: str | None = None):
        self.root_path = unquote(urlsplit(root_uri).path).rstrip("/") + "/" if root_uri else None

    def path(self, item) -> str:
        if isinstance(item, dict):
            if item.get("path"):
                return item["path"]
            item = item.get("uri")
        if not item:
            return "(session)"
        text = str(item)
        if text.startswith("file:"):
            text = unquote(urlsplit(text).path)
        if self.root_path and text.startswith(self.root_path):
            return text[len(self.root_path):]
        return text

    def captured(self, result: dict) -> list[str]:
        """The lines of a `turn capture` result: each path with its image and checkpoint, then gaps."""
        lines = []
        for c in result["captured"]:
            image = "(absent)" if c.get("absent") else (c.get("digest") or "no image")[:8]
            name = c.get("checkpoint")
            lines.append(f"{self.path(c)}  {image}  "
                         + (f"checkpoint {name}" if name else "(no change recorded)"))
        return lines + [f"gap: {self.gap(g)}" for g in result["gaps"]]

    def gap(self, g: dict) -> str:
        where = self.path(g) if g.get("uri") else "(session)"
        turn = f"turn {g['turn']}" if g.get("turn") is not None else "live"
        line = f"{where}: {g.get('reason')} ({turn})"
        # an older server's gap (no words of its own): this client's table
        detail = g.get("detail") or g.get("words") or __getattr__("GAP_TEXT").get(g.get("reason") or "", "")
        return line + (f" - {detail}" if detail else "")

    # -- log --------------------------------------------------------------------------------------
    def log(self, log: dict, info: dict | None = None) -> list[str]:
        turns = log.get("turns", [])
        out = []
        if info:
            out.append(f"session {info.get('sessionId')} · {info.get('storeKind')} store · "
                       f"{info.get('turnCount')} turn(s) · head {info.get('headSeq')}")
        if not turns:
            out.append("no turns recorded yet")
        for t in turns:
            extra = f" · directive {t['directiveId']}" if t.get("directiveId") else ""
            out.append(f"turn {t['turn']} · {t['kind']} · {t['state']}{extra}")
            out.append(f"  prompt:   {clip(t.get('prompt'))}")
            if t.get("response"):
                out.append(f"  answer:   {clip(t.get('response'))}")
            files = t.get("files", [])
            if files:
                out.append("  files:")
                width = max(len(self.path(f)) for f in files)
                for f in files:
                    if f.get("before") == "absent" and f.get("after") == "absent":
                        out.append(f"    {self.path(f):<{width}}  created and removed in this turn "
                                   "(a transient: nothing to put back)")
                        continue
                    out.append(f"    {self.path(f):<{width}}  {short(f.get('before'))} -> "
                               f"{short(f.get('after'))}  checkpoint {f.get('checkpoint')}")
            steps = t.get("stepList")
            if steps:
                out.append("  steps:")
                for s in steps:
                    summ = f"  {clip(s.get('summary'), 50)}" if s.get("summary") else ""
                    out.append(f"    {s['id']:<6} {s['kind']:<13} scope {s['scope']}{summ}")
            elif t.get("steps"):
                out.append(f"  steps:    {t['steps']}")
            for g in t.get("gaps", []):
                out.append(f"  gap:      {self.gap(g)}")
            for rec in (x for x in log.get("restores", []) if x.get("afterTurn") == t["turn"]):
                out.extend(self.restore_record(rec))
        return out

    def restore_record(self, rec: dict) -> list[str]:
        """One restore that kept every turn, as the log shows it after the turn it followed."""
        paths = [self.path(p) for p in rec.get("paths", [])]
        more = rec.get("count", len(paths)) - len(paths)
        what = "restore" if rec.get("operation") == "restore" else "files-only rewind"
        return [f"  then a {what} ({when(rec.get('created'))}): {rec.get('count', len(paths))} "
                f"file(s) back to how they were {boundary_words(rec.get('boundary') or {})}"
                + (": " + ", ".join(paths) + (f" and {more} more" if more > 0 else "") if paths else "")]

    # -- rewind -----------------------------------------------------------------------------------
    def candidate(self, c: dict, steps: dict[str, dict] | None = None, *,
                  keep_user_edits: bool = False, conflict_markers: bool = False,
                  directives: dict[str, str] | None = None) -> list[str]:
        out = [MODE_TEXT[c["mode"]]] if c.get("mode") in MODE_TEXT else []
        out += self.settled_first(c) + [
            "Keeps:", kept_turns(c["keep"], "nothing: the session becomes empty"),
            "Discards:", later_turns(c["discard"], "turn(s)", "no turns")]
        out.extend(self.files(c.get("files", [])))
        out.extend(self.user_edits(c.get("files", []), keep_user_edits, conflict_markers))
        out.extend(self.gap_lines(c.get("gaps", []), "rewind"))
        out.extend(self.effect_lines(c, steps,
                                     "What the later turns' steps did (they stay; their files go back):"
                                     if c.get("mode") == "files" else "What the discarded steps did:"))
        return out + closing_lines(c, "attempt(s) discarded, state afterwards", "Workflow cleared",
                                   names=directives)

    def gap_lines(self, gaps: list[dict], what: str) -> list[str]:
        out = [f"What this {what} cannot undo ({len(gaps)} gap(s)):" if gaps
               else "Gaps: none, every captured file can be put back"]
        return out + [f"  {self.gap(g)}" for g in gaps]

    def effect_lines(self, c: dict, steps: dict[str, dict] | None, heading: str) -> list[str]:
        """The steps of the later turns by what they did, under the people's name of each bucket
        that holds one (effects/words.py); nothing at all when there is no such step."""
        described = {s["id"]: s for s in c.get("steps") or []}
        shown = shown_buckets(c.get("effects") or {})
        if not shown:
            return []
        out = [heading]
        for _key, name, ids in shown:
            out.append(f"  {name}:")
            for sid in ids:
                out.append(f"    {self.step_line(sid, described.get(sid), (steps or {}).get(sid))}")
        return out

    @staticmethod
    def step_line(sid: str, described: dict | None, logged: dict | None) -> str:
        if described:
            turn = f" (turn {described['turn']})" if described.get("turn") else ""
            return clip(described.get("what"), 90) + turn
        if logged:  # an older server: the log's summary
            return clip(logged.get("summary") or logged.get("kind"), 90)
        return f"step {sid}"

    def files(self, files: list[dict], actions: dict | None = None) -> list[str]:
        changing = [f for f in files if f.get("action") != "unchanged"]
        out = [f"Files ({len(changing)} to change):" if files else "Files: none to change"]
        if not files:
            return out
        width = max(len(self.path(f)) for f in files)
        words = actions or ACTION_TEXT
        for f in files:
            action = words.get(f.get("action") or "", f.get("action"))
            if f.get("action") == "restore" and f.get("from") == "absent":
                action = "recreate"
            line = f"  {action:<8} {self.path(f)}"
            note = mode_note(f)
            if note:
                line = f"{line:<{width + 12}}  {note}"
            if f.get("userEdit") and f.get("action") != "unchanged":
                line = f"{line:<{width + 12}}  ! your edit (" + \
                    USER_EDIT_TEXT.get(f.get("userEditBy") or "", "no turn made it") + ")"
            if f.get("pushed"):
                line += f"  ! committed and pushed to {f['pushed']}: this change has left the machine"
            out.append(line)
        return out

    def user_edits(self, files: list[dict], keep: bool, markers: bool = False) -> list[str]:
        """The changes no discarded turn made: overwritten, or (with --keep-user-edits) carried
        onto the restored files, each with what keeping does to it (travel/user_edits.py)."""
        edits = [f for f in files if f.get("userEdit") and f.get("action") != "unchanged"]
        if not edits:
            return ["Your edits that will be overwritten: none"]
        if keep:
            head = "Your edits, kept (--keep-user-edits):"
        else:
            head = "Your edits that will be overwritten (--keep-user-edits keeps them):"
        out = [head]
        for f in edits:
            who = USER_EDIT_TEXT.get(f.get("userEditBy") or "", "no turn made it")
            out.append(f"  {self.path(f)}  ({who})")
            if f.get("merge"):
                words = keep_words(f)
                if markers and f["merge"].get("result") == "conflict":
                    words = "conflict with the later turns: written with conflict markers"
                out.append(f"    keeping it: {words}")
        if any((f.get("merge") or {}).get("result") == "conflict" for f in edits) and not markers:
            out.append("  (--conflict-markers writes a conflicting file with markers where the "
                       "changes meet, instead of leaving it as it is now)")
        return out

    def kept(self, result: dict) -> list[str]:
        """What keeping the user's edits did: kept, merged, conflict markers, conflicts left."""
        conflicts = set(result.get("conflicts", []))
        out = [f"  merged your edit onto the restored file: {self.path(u)}"
               for u in result.get("merged", [])]
        out += [f"  conflict, written with conflict markers: {self.path(u)}"
                for u in result.get("conflictMarkers", [])]
        out += [f"  conflict, left as it was (resolve it by hand): {self.path(u)}" if u in conflicts
                else f"  kept as it was: {self.path(u)}" for u in result.get("kept", [])]
        return out

    def commit(self, result: dict, what: str) -> list[str]:
        status = result.get("status")
        if status == "committed":
            where = ([f"epoch {result['epoch']}"] if "epoch" in result else []) + \
                [f"head {result.get('headSeq')}"]
            out = [f"{what} committed ({', '.join(where)})"]
            out.extend(self.kept(result))
        elif status == "nothing-to-do":
            out = [f"nothing to {what}: this is the current state"]
        elif status == "stale":
            out = [f"{what} not done: something changed since it was prepared (stale); prepare it again"]
        else:
            out = [f"{what} {status}: {result.get('reason', '')}".rstrip()]
        for r in result.get("recovery", []) or []:
            out.extend(self.recovery_record(r))
        return out

    # -- fork -------------------------------------------------------------------------------------
    def fork_plan(self, report: dict, steps: dict[str, dict] | None = None, *,
                  keep_user_edits: bool = False, conflict_markers: bool = False) -> list[str]:
        """A fork in place in its own words: the later turns stay in the frozen session (nothing is
        discarded), the files are put back as they were at the end of turn k."""
        steps = steps or {}
        out = ["The branch keeps:", kept_turns(report["keep"], "no turns: the branch starts empty"),
               "In the frozen session only (kept there, readable, not in the branch):",
               later_turns(report["discard"], "later turn(s)", "no later turns")]
        files = report.get("files", [])
        out.extend(self.files(files, FORK_ACTION_TEXT))
        out.extend(self.user_edits(files, keep_user_edits, conflict_markers))
        edits = [f for f in files if f.get("userEdit") and f.get("action") != "unchanged"]
        if edits and not keep_user_edits:
            out.append("  " + ("Redo of the frozen session's last state brings them back."
                               if report.get("redoable", True) else
                               "This store keeps no heads: nothing brings them back afterwards."))
        out.extend(self.gap_lines(report.get("gaps", []), "fork"))
        out.extend(self.effect_lines(report, steps,
                                     "Steps of the later turns (they stay done; nothing is re-run):"))
        return out + closing_lines(report, "attempt(s) stay in the frozen session, state in the "
                                           "branch", "Not carried into the branch")

    # -- redo -------------------------------------------------------------------------------------
    def redo_list(self, result: dict) -> list[str]:
        groups = result.get("groups", [])
        if not groups:
            return [f"nothing to redo: {result.get('reason', 'no groups')}"
                    + (" (`turnback redo --all`)" if result.get("hidden") else "")]
        if result.get("all"):
            out = ["Every earlier state, newest first (`turnback redo --head SEQ` brings one back):"]
        else:
            out = ["States a rewind, Redo or fork left behind, newest first (`turnback redo --head SEQ` "
                   "brings one back):"]
        for g in groups:
            changes = g.get("changes") or {}
            what = ""
            if "files" in changes:
                what = (f"; changes {changes['files']} file(s)"
                        + (": " + ", ".join(changes["paths"]) if changes.get("paths") else "")
                        + ("…" if changes["files"] > len(changes.get("paths", [])) else ""))
            mark = " (earlier on this line)" if g.get("ancestor") else ""
            if g.get("frozenParent"):
                mark += f" (a state of the frozen session {str(g.get('sessionId'))[:12]})"
            if g.get("keptBefore"):
                mark += " (the files as they were before a rewind, Redo or fork overwrote them)"
            out.append(f"  head {g['headSeq']:<4} {g['turnCount']} turn(s), last prompt "
                       f"\u201c{clip(g.get('lastPrompt'), 50)}\u201d, saved {when(g.get('created'))}"
                       f"{what}{mark}")
        if result.get("hidden") and not result.get("all"):
            out.append(f"  ({result['hidden']} earlier state(s) of the current line: `turnback redo --all`)")
        return out

    def settled_first(self, c: dict) -> list[str]:
        """An agent's idle turn that the rewind, Redo or fork settled before it could be planned."""
        s = c.get("settledFirst")
        return [f"First: {s.get('text')}"] if s and s.get("text") else []

    def redo_plan(self, plan: dict, *, keep_user_edits: bool = False) -> list[str]:
        out = self.settled_first(plan) + \
            [f"Would bring back head {plan.get('headSeq')}: {plan.get('turnCount')} turn(s)"]
        out.extend(self.files(plan.get("files", [])))
        out.extend(self.user_edits(plan.get("files", []), keep_user_edits))
        for g in plan.get("gaps", []):
            out.append(f"  gap: {self.gap(g)}")
        if plan.get("summary"):
            out.append("In short: " + plan["summary"])
        return out

    # -- the rest ---------------------------------------------------------------------------------
    def recovery_record(self, r: dict) -> list[str]:
        out = [f"recovery {r['id']} ({r.get('operation')}, {when(r.get('created'))}): {r.get('reason')}"]
        for p in r.get("paths", []):
            out.append(f"  not put back: {self.path(p)}")
        for b in r.get("backups", []):
            out.append(f"  backup of {self.path(b)}: {short(b.get('digest'))}")
        return out

    def info(self, info: dict) -> list[str]:
        return [
            f"workspace:  {info.get('workspace')}",
            f"session:    {info.get('sessionId')}",
            f"store:      {info.get('storeKind')}",
            f"this view:  {self.ownership(info)}",
            f"turns:      {info.get('turnCount')}",
            f"head:       {info.get('headSeq')}",
            f"live gaps:  {info.get('liveGaps')}",
            f"recovery:   {info.get('recovery')} record(s)",
        ] + (["frozen:     yes"] if info.get("frozen") else []) + self.pending(info.get("pending")) \
            + self.recovered_at_open(info)

    @staticmethod
    def recovered_at_open(info: dict) -> list[str]:
        """What the answering owner recovered when it opened the store: after a crash the owner a
        hook started is the one that recovers, and this is where the user learns what it did."""
        from ..travel.recovered import transaction_sentence

        opened = info.get("opened") or {}
        return [f"recovered:  {transaction_sentence(line)} (when this owner opened the store)"
                for line in opened.get("recovered") or ()]

    @staticmethod
    def ownership(info: dict) -> str:
        """Who owns the store, as it is: a dead owner is called dead, never an owner."""
        owner = info.get("owner") or {}
        who = f"pid {owner.get('pid')} on {owner.get('host')}"
        state = owner.get("state") or ("live" if owner.get("pid") else "none")
        if info.get("ownership") == "owner":
            return f"owner (store owned by {who})"
        if state == "dead":
            return (f"read-only; nobody owns the store: its last owner ({who}) is no longer running, "
                    "and the next process that takes it recovers what it left")
        if state == "none" or not owner.get("pid"):
            return "read-only; nobody owns the store"
        if state == "unknown":
            return f"observer (store owned by {who}, another machine: whether it still runs is unknown)"
        return f"observer (store owned by {who})"

    def pending(self, pending) -> list[str]:
        """Intent records in the store: interrupted (or running) transactions, said so."""
        out = []
        for p in pending or ():
            what = p.get("operation") or "transaction"
            out.append(f"pending:    {what} {str(p.get('id'))[:12]} ({p.get('files')} file(s), "
                       f"{when(p.get('created'))}): {p.get('message')}")
        return out

    @staticmethod
    def stats(stats: dict) -> list[str]:
        """What a collection freed, and why it kept the rest (slice timings stay in --json)."""
        retired, deleted = stats.get("headsRetired", 0), stats.get("objectsDeleted", 0)
        if retired or deleted:
            out = [f"freed {size(stats.get('bytesFreed', 0))}: {retired} old state(s) retired, "
                   f"{deleted} unreferenced object(s) deleted"]
        else:
            out = ["freed nothing: every state is still needed"]
        reasons = kept_reasons(stats.get("keptFor") or {})
        out.append(f"kept {size(stats.get('bytesKept', 0))}"
                   + (": " + ", ".join(reasons) if reasons else ""))
        return out

    @staticmethod
    def fsck(report) -> list[str]:
        out = []
        for p in report.problems:
            out.append(f"{p.severity}: {p.path}: {p.what}")
        verdict = "sound" if report.ok else f"NOT sound ({len(report.errors)} problem(s))"
        pending = getattr(report, "pending", ())
        if pending:
            verdict += (f", with {len(pending)} interrupted transaction(s) pending (the next process "
                        "that takes the store finishes or rolls them back)")
        out.append(f"fsck {report.path}: {report.records_checked} record(s) and "
                   f"{report.objects_checked} object(s) checked; {verdict}")
        return out


def kept_reasons(kept: dict[str, int]) -> list[str]:
    """Why a collection kept the states it kept, in words (`keptFor`)."""
    return [f"{kept[k]} {KEPT_TEXT[k]}" if k != "current" else KEPT_TEXT[k]
            for k in KEPT_TEXT if kept.get(k)]


def fsck_json(report) -> dict:
    return {"path": report.path, "ok": report.ok, "recordsChecked": report.records_checked,
            "objectsChecked": report.objects_checked,
            "pending": list(getattr(report, "pending", ())),
            "problems": [{"path": p.path, "what": p.what, "severity": p.severity} for p in report.problems]}


def step_index(log: dict) -> dict[str, dict]:
    """Step id -> {kind, scope, summary}, from a session log, to describe effect buckets."""
    return {s["id"]: s for t in log.get("turns", []) for s in t.get("stepList", [])}

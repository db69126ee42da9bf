"""`turnback demo`: a scripted agent session in a scratch workspace, told as a short story.

Everything goes through the workbench exactly as an agent's hooks and an editor would drive it: turns
begin and settle, the agent's hook captures files before and after it writes them, steps are logged
with their scope, a directive is anchored in a file and attempted, and one change is made behind
turnback's back (only the settle sweep sees it). Then the demo rewinds, shows what came back and what
could not be undone, redoes the rewound state, forks the session at turn 2 (the parent frozen, the
branch taking a different turn, the lineage drawn offline), collects, and runs fsck. It checks itself as it goes and
exits 0 only when every check holds.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from ..errors import InvalidParams
from .render import Renderer, clip, fsck_json, short, step_index

STORE = ".turnback"

START = {
    "README.md": "# tiny\n\nA tiny greeting app.\n",
    "src/app.py": 'from util import slugify\n\n\ndef greet(name):\n    return "Hello " + name\n',
    "src/util.py": 'def slugify(text):\n    return text.lower().replace(" ", "-")\n',
    "notes/todo.md": "- write the greeting\n- old idea: a web version\n",
}
APP_V1 = ('from util import slugify\n\n\ndef greet(name):\n'
          '    return f"Hello, {name}! Nice to see you."\n')
UTIL_V2 = ('def slugify(text):\n    """Lower-case text with spaces turned into dashes: \'A B\' -> \'a-b\'."""\n'
           '    return text.lower().replace(" ", "-")\n')
UTIL_PATCH = ('--- a/src/util.py\n+++ b/src/util.py\n@@ -1,2 +1,3 @@\n def slugify(text):\n'
              '+    """Lower-case text with spaces turned into dashes: \'A B\' -> \'a-b\'."""\n'
              '     return text.lower().replace(" ", "-")\n')
README_BEHIND = "# tiny\n\nA tiny greeting app.\n\nFormatted by a shell script turnback never heard about.\n"
APP_V2 = APP_V1 + '\n\nVERSION = "0.2.0-preview"\n'
PREVIEW = "preview build of tiny 0.2.0\n"


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file of the workspace (not the store), as bytes."""
    out = {}
    for folder, dirs, files in os.walk(root):
        rel_dir = os.path.relpath(folder, root)
        dirs[:] = sorted(d for d in dirs if not (rel_dir == "." and d == STORE))
        for name in files:
            rel = os.path.normpath(os.path.join(rel_dir, name)).replace(os.sep, "/")
            out[rel] = (Path(folder) / name).read_bytes()
    return dict(sorted(out.items()))


class Story:
    """Prints the story as it happens (text mode) and gathers the structured account (--json)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.quiet = ctx.json
        self.account: dict = {"checks": []}

    def say(self, *lines: str) -> None:
        if not self.quiet:
            self.ctx.print(*lines)

    def heading(self, text: str) -> None:
        self.say("", text, "-" * len(text))

    def check(self, name: str, ok: bool, detail: str = "") -> bool:
        self.account["checks"].append({"name": name, "ok": bool(ok), "detail": detail})
        self.say(f"  [{'ok' if ok else 'FAILED'}] {name}" + (f": {detail}" if detail and not ok else ""))
        return ok


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _files_table(story: Story, now: dict[str, bytes], before: dict[str, bytes] | None = None) -> None:
    paths = sorted(set(now) | set(before or {}))
    width = max((len(p) for p in paths), default=0)
    for rel in paths:
        if rel not in now:
            story.say(f"  - {rel:<{width}}  (gone)")
            continue
        text = now[rel].decode("utf-8", "replace")
        mark = " "
        if before is not None:
            mark = "+" if rel not in before else ("~" if before[rel] != now[rel] else "=")
        first = next((ln for ln in text.splitlines() if ln.strip()), "")
        story.say(f"  {mark} {rel:<{width}}  {len(now[rel]):>4} bytes  {clip(first, 44)}")


def _diff_names(a: dict[str, bytes], b: dict[str, bytes]) -> str:
    names = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
    return ", ".join(names) or "none"


def run_demo(ctx) -> int:
    from ..store.fsck import fsck
    from ..workbench import Options, Workbench

    keep = ctx.args.keep
    if keep:
        root = Path(keep).absolute()
        if root.exists() and (not root.is_dir() or any(root.iterdir())):
            raise InvalidParams(f"--keep {keep}: the folder must be new or empty", data={"path": str(root)})
        root.mkdir(parents=True, exist_ok=True)
    else:
        root = Path(tempfile.mkdtemp(prefix="turnback-demo-"))
    story = Story(ctx)
    try:
        ok = _run(story, root, Options(store_kind="heads"), Workbench, fsck)
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    story.account.update({"workspace": str(root), "kept": bool(keep), "ok": ok})
    if ctx.json:
        ctx.emit(story.account)
    else:
        passed = sum(c["ok"] for c in story.account["checks"])
        total = len(story.account["checks"])
        story.heading("Verdict")
        story.say(f"{passed}/{total} checks hold. " + ("The demo verified itself." if ok else
                                                       "Something is wrong: see FAILED above."))
        story.say(f"The workspace is still there: {root}" if keep else
                  "The scratch workspace has been removed (use --keep DIR to look around).")
    return 0 if ok else 1


def _run(story: Story, root: Path, options, Workbench, fsck) -> bool:
    for rel, text in START.items():
        _write(root, rel, text)
    story.say("turnback demo: a scripted agent session, rewound and redone",
              f"Scratch workspace: {root}",
              "It starts with " + ", ".join(START) + ".")
    wb = Workbench.open(root, options)
    try:
        return _session(story, root, wb, fsck, Workbench, options)
    finally:
        _close(wb)


def _close(wb) -> None:
    if not getattr(wb, "_demo_closed", False):
        wb._demo_closed = True
        wb.close()


def _session(story: Story, root: Path, wb, fsck, Workbench, options) -> bool:
    uri = wb.ws.to_uri
    r = Renderer(uri("x").rsplit("/", 1)[0])
    acct = story.account
    acct["turns"] = []

    def agent_writes(n: int, rel: str, text: str | None, summary: str) -> None:
        """An agent's tool call: the hook captures before, the tool writes, the hook captures after."""
        wb.turns.capture({"uris": [uri(rel)], "phase": "before"})
        if text is None:
            (root / rel).unlink()
        else:
            _write(root, rel, text)
        wb.turns.capture({"uris": [uri(rel)], "phase": "after"})
        wb.turns.step({"turn": n, "kind": "file-delete" if text is None else "file-write", "scope": "host",
                       "summary": summary, "uris": [uri(rel)]})

    # -- turn 1 -------------------------------------------------------------------------------
    story.heading("Turn 1: a chat turn edits a file")
    n = wb.run(wb.turns.begin_job({"kind": "chat", "prompt": "Make the greeting friendlier"}))["turn"]
    story.say("You ask: \u201cMake the greeting friendlier\u201d. turnback fixes the pre-turn checkpoint, then",
              "the agent's hook captures src/app.py just before the tool writes it, and again after.")
    agent_writes(n, "src/app.py", APP_V1, "friendlier greeting")
    wb.turns.respond({"turn": n, "text": "The greeting now says hello with a smile.", "final": True})
    wb.run(wb.turns.settle_job({"turn": n}))
    after_turn1 = snapshot(root)
    acct["turns"].append({"turn": n, "what": "chat turn, agent wrote src/app.py (scope host)"})

    # -- turn 2 -------------------------------------------------------------------------------
    story.heading("Turn 2: a directive turn")
    d = wb.directives.upsert({"uri": uri("src/util.py"), "anchor": {"line": 0, "character": 0},
                              "request": "Document slugify"})
    story.say(f"You anchor a directive on line 1 of src/util.py: \u201cDocument slugify\u201d ({d['id']}).",
              "The agent attempts it in a directive turn and records its answer and its patch.")
    n = wb.run(wb.turns.begin_job({"kind": "directive", "directiveId": d["id"],
                                   "prompt": "Directive: Document slugify"}))["turn"]
    agent_writes(n, "src/util.py", UTIL_V2, "docstring for slugify")
    wb.directives.record({"directiveId": d["id"], "turn": n, "answer": "Added a one-line docstring.",
                          "patch": UTIL_PATCH})
    wb.turns.respond({"turn": n, "text": "Documented slugify.", "final": True})
    wb.run(wb.turns.settle_job({"turn": n}))
    state2 = next(x for x in wb.directives.list({})["directives"] if x["id"] == d["id"])
    story.say(f"The directive is now {state2['state']} with {len(state2['attempts'])} attempt(s).")
    acct["turns"].append({"turn": n, "what": "directive turn, agent wrote src/util.py", "directive": d["id"]})

    # -- turn 3 -------------------------------------------------------------------------------
    story.heading("Turn 3: the agent deletes a file; a script edits another behind turnback's back")
    n = wb.run(wb.turns.begin_job({"kind": "chat", "prompt": "Clean up: the notes are obsolete"}))["turn"]
    agent_writes(n, "notes/todo.md", None, "removed obsolete notes")
    _write(root, "README.md", README_BEHIND)  # no capture, no step: nobody tells turnback
    story.say("The agent deletes notes/todo.md through its tools (captured before and after).",
              "Meanwhile a shell script rewrites README.md and tells nobody. Only the sweep that",
              "runs when the turn settles can notice it.")
    wb.turns.respond({"turn": n, "text": "Removed the old notes.", "final": True})
    wb.run(wb.turns.settle_job({"turn": n}))
    log = wb.turns.log({})
    t3 = log["turns"][n - 1]
    readme = next((f for f in t3["files"] if f["path"] == "README.md"), None)
    story.say("The settle sweep " + (f"caught it: README.md {short(readme['before'])} -> "
                                     f"{short(readme['after'])}, checkpoint {readme['checkpoint']}."
                                     if readme else "did NOT catch it."))
    acct["turns"].append({"turn": n, "what": "agent deleted notes/todo.md; README.md changed behind "
                                             "turnback's back"})

    # -- turn 4 -------------------------------------------------------------------------------
    story.heading("Turn 4: a deploy script of unknown scope, and messages to the outside world")
    n = wb.run(wb.turns.begin_job({"kind": "chat", "prompt": "Ship a preview and tell the team"}))["turn"]
    agent_writes(n, "src/app.py", APP_V2, "version bump")
    wb.turns.step({"turn": n, "kind": "shell", "summary": "ran ./deploy-preview.sh"})  # no scope given
    _write(root, "build/preview.txt", PREVIEW)  # what the script left behind
    wb.turns.step({"turn": n, "kind": "network-send", "scope": "crossing",
                   "summary": "posted the preview link to #team"})
    wb.turns.step({"turn": n, "kind": "network-send", "scope": "crossing", "held": True,
                   "summary": "email to the customer, still queued"})
    wb.turns.workflow_set({"tasks": [{"id": "t1", "title": "Review the preview", "turn": n}],
                           "goals": [{"id": "g1", "title": "Ship 0.2.0"}]})
    wb.turns.respond({"turn": n, "text": "Preview deployed; the team knows; the customer email is queued.",
                      "final": True})
    wb.run(wb.turns.settle_job({"turn": n}))
    story.say("The agent bumps the version in src/app.py, runs a deploy script without saying where",
              "its effects go (so turnback records a step-scope-unknown gap), posts to the team chat",
              "(scope crossing: it has left this machine) and queues an email that is still held.",
              "It also sets a workflow: one task and one goal.")
    acct["turns"].append({"turn": n, "what": "shell step without scope, a crossing send, a held send, "
                                             "workflow set"})

    before_rewind = snapshot(root)
    log = wb.turns.log({})
    info = wb.info()
    acct["logBefore"] = log
    story.heading("The session log")
    story.say(*r.log(log, info))

    # -- rewind ----------------------------------------------------------------------------------
    boundary = {"kind": "beforePrompt", "turn": 2}
    story.heading("Rewind to just before prompt 2")
    story.say("turnback derives the candidate first: everything the rewind would do and everything it",
              "cannot undo. Nothing has changed yet. This is what a person confirms:", "")
    candidate = wb.rewind.prepare({"boundary": boundary})
    acct["candidate"] = candidate
    story.say(*["  " + line for line in r.candidate(candidate, step_index(log))])
    head_before = info["headSeq"]
    result = wb.rewind.commit({"boundary": boundary, "planHash": candidate["planHash"]})
    acct["rewind"] = result
    story.say("", *r.commit(result, "Rewind"))
    after_rewind = snapshot(root)
    acct["filesAfterRewind"] = {k: v.decode("utf-8", "replace") for k, v in after_rewind.items()}
    story.heading("Files on disk after the rewind (~ changed back, + brought back, - removed)")
    _files_table(story, after_rewind, before_rewind)
    log_after = wb.turns.log({})
    acct["logAfterRewind"] = log_after
    story.heading("The log after the rewind")
    story.say(*r.log(log_after, wb.info()))
    gone = candidate["effects"]
    story.heading("What the rewind could not undo")
    for sid in gone["crossedUncompensated"]:
        s = step_index(log).get(sid, {})
        story.say(f"  {sid} {s.get('kind')}: {s.get('summary') or '(no summary)'} - it may have left "
                  "this machine; undo it yourself if needed")
    for sid in gone["droppedBeforeCrossing"]:
        s = step_index(log).get(sid, {})
        story.say(f"  {sid} {s.get('kind')}: {s.get('summary')} - was still held, so it was dropped "
                  "and never sent")
    for g in candidate["gaps"]:
        story.say(f"  gap: {r.gap(g)}")
    external = [f["path"] for f in candidate["files"] if f.get("externalChange")]
    story.say("  " + ("edits made outside turnback that the rewind overwrote: " + ", ".join(external)
                      if external else "no file had been edited outside turnback since its last capture, "
                      "so the rewind overwrote nobody's work"))
    story.say("Checks:")
    ok = True
    ok &= story.check("the rewind committed", result.get("status") == "committed", str(result))
    ok &= story.check("every file equals its image from before prompt 2", after_rewind == after_turn1,
                      "differs: " + _diff_names(after_rewind, after_turn1))
    ok &= story.check("the session keeps exactly turn 1", len(log_after["turns"]) == 1,
                      f"{len(log_after['turns'])} turns")
    ok &= story.check("the settle sweep caught the change made behind turnback's back",
                      readme is not None and readme["before"] not in (None, "unknown"))
    ok &= story.check("the unknown-scope step is reported as a gap",
                      any(g["reason"] == "step-scope-unknown" for g in candidate["gaps"]))
    ok &= story.check("the crossing send is listed as already gone",
                      bool(gone["crossedUncompensated"]))
    ok &= story.check("the directive attempt is discarded",
                      any(x.get("id") == d["id"] for x in candidate["directives"]))

    # -- redo ------------------------------------------------------------------------------------
    story.heading("Redo: bring the rewound state back")
    listing = wb.redo.list({})
    story.say(*r.redo_list(listing))
    groups = listing.get("groups", [])
    group = next((g for g in groups if g["headSeq"] == head_before), groups[0] if groups else None)
    acct["redo"] = {"list": listing}
    if group is None:
        ok &= story.check("a Redo group exists for the rewound state", False, listing.get("reason", ""))
    else:
        plan = wb.redo.prepare({"headSeq": group["headSeq"]})
        story.say("", *r.redo_plan(plan))
        redo = wb.redo.commit({"headSeq": group["headSeq"], "planHash": plan["planHash"]})
        acct["redo"].update({"plan": plan, "commit": redo})
        story.say(*r.commit(redo, "Redo"))
        after_redo = snapshot(root)
        acct["filesAfterRedo"] = {k: v.decode("utf-8", "replace") for k, v in after_redo.items()}
        story.heading("Files on disk after the redo (compared with after the rewind)")
        _files_table(story, after_redo, after_rewind)
        story.say("Redo brought back the files and the conversation; it ran no step again (the team",
                  "post is not re-sent) and the directive records stay as the rewind left them.")
        story.say("Checks:")
        ok &= story.check("the redo committed", redo.get("status") == "committed", str(redo))
        ok &= story.check("every file equals its image from before the rewind", after_redo == before_rewind,
                          "differs: " + _diff_names(after_redo, before_rewind))
        ok &= story.check("the session has its four turns again", wb.info()["turnCount"] == 4,
                          f"{wb.info()['turnCount']} turns")

    # -- fork (cli/demo_fork.py) -------------------------------------------------------------------
    from .demo_fork import fork_chapter

    forked_ok, live_turns = fork_chapter(story, root, wb, uri)
    ok &= forked_ok

    # -- collection and fsck -----------------------------------------------------------------------
    story.heading("Collection")
    if callable(getattr(wb.collection, "run", None)):
        stats = wb.collection.run({})
        acct["collection"] = stats
        story.say("One full collection: retires heads nobody needs and deletes unreferenced objects,",
                  "keeping the current head, the Redo groups, a grace window and recovery records.")
        story.say(*Renderer.stats(stats))
    else:
        acct["collection"] = None
        story.say("(the collector is not part of this build yet; skipped)")
    files_now = snapshot(root)
    _close(wb)
    report = fsck(root / STORE)
    acct["fsck"] = fsck_json(report)
    story.heading("fsck: every record and every object verified")
    story.say(*Renderer.fsck(report))
    story.say("Checks:")
    ok &= story.check("fsck finds the store sound", report.ok,
                      "; ".join(f"{p.path}: {p.what}" for p in report.errors))
    ok &= story.check("collection left the files alone", files_now == snapshot(root))
    # Reopen: the session comes back from disk as it was.
    wb2 = Workbench.open(root, options)
    try:
        ok &= story.check("reopening gives back the live branch and its turns",
                          wb2.info()["turnCount"] == live_turns, f"{wb2.info()['turnCount']} turns")
    finally:
        wb2.close()
    return bool(ok)

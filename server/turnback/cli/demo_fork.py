"""The demo's fork chapter: after the rewind and the redo, fork the session at turn 2, show the
report, freeze the parent, take a different turn in the branch, and draw the lineage offline."""

from __future__ import annotations

from .fork_cmd import compare_lines, report_lines, tree_lines
from .render import Renderer, step_index

FAREWELL = 'def farewell(name):\n    return "Bye " + name\n'  # what the branch writes instead


def fork_chapter(story, root, wb, uri) -> tuple[bool, int]:
    """Returns (every check held, the live session's turn count afterwards)."""
    from ..errors import TurnbackError
    from ..travel.offline import compare, lineage

    ok = True
    story.heading("Fork: try again from turn 2, keeping the first attempt frozen")
    parent = wb.state.session_id
    report = wb.fork.prepare({"turn": 2})
    r = Renderer(uri("x").rsplit("/", 1)[0])
    story.say(*report_lines(r, report, step_index(wb.turns.log({})), None))
    out = wb.fork.confirm({"turn": 2, "planHash": report["hash"]})
    story.account["fork"] = {"report": report, "confirm": out}
    ok &= story.check("the fork committed", out.get("status") == "forked", str(out.get("status")))
    if out.get("status") != "forked":
        return bool(ok), wb.state.turn_count
    branch = out["branch"]["sessionId"]
    story.say(f"Forked: the branch {branch[:12]} keeps turns 1-2; the parent {parent[:12]} is frozen.")
    # The branch goes its own way: a different answer to what turn 3 asked.
    n = wb.run(wb.turns.begin_job({"prompt": "Add a farewell instead"}))["turn"]
    wb.turns.capture({"uris": [uri("src/farewell.py")], "phase": "before"})
    (root / "src" / "farewell.py").write_text(FAREWELL)
    wb.turns.capture({"uris": [uri("src/farewell.py")]})
    wb.turns.step({"turn": n, "kind": "file-write", "scope": "host", "uris": [uri("src/farewell.py")],
                   "summary": "write src/farewell.py"})
    wb.turns.respond({"turn": n, "text": "Added farewell().", "final": True})
    wb.run(wb.turns.settle_job({"turn": n, "status": "settled"}))
    try:
        wb.sessions.guard({"sessionId": parent})
        refused = None
    except TurnbackError as exc:
        refused = exc.code
    story.say("", "The lineage, read from the store alone (`turnback branch`):")
    view = lineage(wb.store)
    story.say(*("  " + line for line in tree_lines(view)))
    c = compare(wb.store, parent, branch)
    story.say("", "The two side by side (`turnback compare`):")
    story.say(*("  " + line for line in compare_lines(c)))
    story.say("Checks:")
    listed = {s["sessionId"]: s for s in wb.sessions.list({})["sessions"]}
    ok &= story.check("the parent is frozen and keeps its four turns",
                      listed[parent]["frozen"] and listed[parent]["turnCount"] == 4)
    ok &= story.check("a new turn in the parent is refused with `frozen`", refused == "frozen",
                      str(refused))
    ok &= story.check("the branch is live with turns 1-2 and its own turn 3",
                      listed[branch]["current"] and wb.state.turn_count == 3)
    ok &= story.check("the offline partition equals what the live fork reported",
                      bool(c.get("liveReport", {}).get("agrees")))
    return bool(ok), wb.state.turn_count

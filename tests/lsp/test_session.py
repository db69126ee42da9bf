"""A whole session over stdio, once with VS Code's and once with Emacs's client capabilities."""

from __future__ import annotations

import asyncio

from lsprotocol import types

from .conftest import Tb


async def turn(tb: Tb, prompt: str, edits: dict[str, str | None], *, respond: str = "done") -> int:
    """Begin a turn, make the edits as an agent would (before/after captures), settle it."""
    n = (await tb.req("turnback/turn/begin", {"kind": "chat", "prompt": prompt}))["turn"]
    for rel, text in edits.items():
        path = tb.root / rel
        await tb.req("turnback/turn/capture", {"uris": [tb.uri(rel)], "phase": "before"})
        if text is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        await tb.req("turnback/turn/capture", {"uris": [tb.uri(rel)]})
        await tb.req("turnback/turn/step", {"turn": n, "kind": "file-write", "scope": "host",
                                             "uris": [tb.uri(rel)], "summary": f"edit {rel}"})
    await tb.req("turnback/turn/respond", {"turn": n, "text": respond, "final": True})
    await tb.req("turnback/turn/settle", {"turn": n, "status": "settled"})
    return n


async def test_initialize_capabilities(ws, servers, flavour):
    tb = await servers(ws, flavour)
    caps = tb.init_result.capabilities
    sync = caps.text_document_sync
    assert sync.open_close is True
    assert sync.save.include_text is True
    commands = caps.execute_command_provider.commands
    assert "turnback.session.info" in commands and "turnback.rewind.commit" in commands
    assert len([c for c in commands if c.startswith("turnback.")]) >= 21
    # both clients offer dynamic registration of file watchers: the server registers one
    await tb.until(lambda: tb.registrations, what="a watcher registration")
    reg = tb.registrations[0]
    assert reg.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
    info = await tb.req("turnback/session/info", {})
    assert info["ownership"] == "owner" and info["turnCount"] == 0
    assert info["storeKind"] == "heads"
    assert tb.status[0]["ownership"] == "owner"


async def test_full_lifecycle_rewind_and_redo(ws, servers, flavour):
    tb = await servers(ws, flavour)
    # didOpen learns the before-image; didSave between turns updates the last known image
    tb.notify(types.TEXT_DOCUMENT_DID_OPEN, types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=tb.uri("a.txt"), language_id="plaintext",
                                             version=1, text="one\n")))
    await turn(tb, "first", {"a.txt": "two\n"})
    await turn(tb, "second", {"a.txt": "three\n", "b.txt": "new\n"})
    log = await tb.req("turnback/session/log", {})
    assert [t["prompt"] for t in log["turns"]] == ["first", "second"]
    assert all(t["state"] == "settled" for t in log["turns"])
    assert {f["uri"] for f in log["turns"][1]["files"]} == {tb.uri("a.txt"), tb.uri("b.txt")}

    boundary = {"kind": "beforePrompt", "turn": 2}
    cand = await tb.req("turnback/rewind/prepare", {"boundary": boundary})
    assert cand["keep"]["turnCount"] == 1 and cand["discard"]["turnCount"] == 1
    actions = {f["uri"]: f["action"] for f in cand["files"]}
    assert actions[tb.uri("b.txt")] == "delete" and actions[tb.uri("a.txt")] == "restore"
    assert tb.epochs == []
    result = await tb.req("turnback/rewind/commit", {"boundary": boundary, "planHash": cand["planHash"]})
    assert result["status"] == "committed"
    await tb.until(lambda: tb.epochs, what="turnback/epoch")
    assert (ws / "a.txt").read_text() == "two\n" and not (ws / "b.txt").exists()
    await tb.req("turnback/session/info", {})  # a sentinel: notifications sent before it came first
    assert len(tb.epochs) == 1
    assert tb.epochs[0]["source"] == "rewind" and tb.epochs[0]["turnCount"] == 1
    assert tb.epochs[0]["epoch"] == result["epoch"]

    groups = await tb.req("turnback/redo/list", {})
    assert groups["available"] is True
    group = groups["groups"][0]
    assert group["turnCount"] == 2
    plan = await tb.req("turnback/redo/prepare", {"headSeq": group["headSeq"]})
    redo = await tb.req("turnback/redo/commit", {"headSeq": group["headSeq"],
                                                 "planHash": plan["planHash"]})
    assert redo["status"] == "committed"
    await tb.until(lambda: len(tb.epochs) == 2, what="the redo epoch")
    assert tb.epochs[1]["source"] == "redo" and tb.epochs[1]["turnCount"] == 2
    assert (ws / "a.txt").read_text() == "three\n" and (ws / "b.txt").read_text() == "new\n"
    info = await tb.req("turnback/session/info", {})
    assert info["turnCount"] == 2


async def test_redo_listing_reports_its_progress(ws, servers):
    """`turnback/redo/list` with a work-done token: begin, a report per step it words (the saved
    states read, the groups compared; at most one per 0.2 s, the first at once), end."""
    tb = await servers(ws, "vscode")
    await turn(tb, "first", {"a.txt": "one\n"})
    await turn(tb, "second", {"a.txt": "two\n"})
    boundary = {"kind": "beforePrompt", "turn": 1}
    cand = await tb.req("turnback/rewind/prepare", {"boundary": boundary})
    await tb.req("turnback/rewind/commit", {"boundary": boundary, "planHash": cand["planHash"]})
    tb.client.progress_reports.setdefault("list-1", [])  # the client made this token
    listing = await tb.req("turnback/redo/list", {"workDoneToken": "list-1"})
    assert [g["turnCount"] for g in listing["groups"]] == [2, 1]
    await tb.req("turnback/session/info", {})  # a sentinel: the progress sent before it came first
    reports = tb.client.progress_reports["list-1"]
    assert reports[0].kind == "begin" and reports[-1].kind == "end", reports
    assert reports[0].title == "turnback: listing what Redo can bring back"
    middle = [r.message for r in reports if r.kind == "report"]
    assert middle and middle[0].startswith("1 of ") and "saved states read" in middle[0], middle


async def test_did_save_and_watched_files_capture(ws, servers, flavour):
    tb = await servers(ws, flavour)
    n = (await tb.req("turnback/turn/begin", {"prompt": "edit by hand"}))["turn"]
    (ws / "a.txt").write_text("saved\n")
    tb.notify(types.TEXT_DOCUMENT_DID_SAVE, types.DidSaveTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=tb.uri("a.txt")), text="saved\n"))
    (ws / "c.txt").write_text("created\n")
    tb.notify(types.WORKSPACE_DID_CHANGE_WATCHED_FILES, types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=tb.uri("c.txt"), type=types.FileChangeType.Created),
        # outside the workspace and inside the store: ignored silently
        types.FileEvent(uri="file:///etc/passwd", type=types.FileChangeType.Changed),
        types.FileEvent(uri=tb.uri(".turnback/FORMAT"), type=types.FileChangeType.Changed)]))

    async def files():
        log = await tb.req("turnback/session/log", {})
        return {f["uri"]: f for f in log["turns"][n - 1]["files"]}

    for _ in range(100):
        got = await files()
        if tb.uri("a.txt") in got and tb.uri("c.txt") in got:
            break
        await asyncio.sleep(0.05)
    assert set(got) == {tb.uri("a.txt"), tb.uri("c.txt")}
    assert got[tb.uri("a.txt")]["before"] != got[tb.uri("a.txt")]["after"]
    await tb.req("turnback/turn/settle", {"turn": n})
    cand = await tb.req("turnback/rewind/prepare", {"boundary": {"kind": "beforePrompt", "turn": 1}})
    assert {f["uri"]: f["action"] for f in cand["files"]} == {tb.uri("a.txt"): "restore",
                                                            tb.uri("c.txt"): "delete"}


async def test_execute_command_equivalents(ws, servers, flavour):
    tb = await servers(ws, flavour)
    info = await tb.req(types.WORKSPACE_EXECUTE_COMMAND,
                        types.ExecuteCommandParams(command="turnback.session.info", arguments=[{}]))
    assert info["ownership"] == "owner"
    begun = await tb.req(types.WORKSPACE_EXECUTE_COMMAND, types.ExecuteCommandParams(
        command="turnback.turn.begin", arguments=[{"prompt": "by command"}]))
    assert begun["turn"] == 1 and set(begun) == {"turn", "started"}
    log = await tb.req(types.WORKSPACE_EXECUTE_COMMAND,
                       types.ExecuteCommandParams(command="turnback.session.log"))
    assert log["turns"][0]["prompt"] == "by command"
    exc = await tb.error(types.WORKSPACE_EXECUTE_COMMAND, types.ExecuteCommandParams(
        command="turnback.turn.settle", arguments=[{"turn": "one"}]))
    assert exc.data["code"] == "invalid-params"


async def test_directives_workflow_agents_and_recovery(ws, servers, flavour):
    tb = await servers(ws, flavour)
    seen = len(tb.directives)
    d = await tb.req("turnback/directive/upsert", {"uri": tb.uri("src/main.py"),
                                                   "anchor": {"line": 0, "character": 0},
                                                   "request": "greet the user by name"})
    assert d["state"] in ("draft", "ready") and d["anchor"]["attached"] is True
    await tb.until(lambda: len(tb.directives) > seen, what="turnback/directives")
    note = tb.directives[-1]
    assert note["uri"] == tb.uri("src/main.py") and note["directives"][0]["id"] == d["id"]
    sub = await tb.req("turnback/directive/upsert", {"uri": tb.uri("src/main.py"),
                                                     "anchor": {"line": 0}, "request": "use f-strings",
                                                     "parentId": d["id"]})
    n = (await tb.req("turnback/turn/begin", {"kind": "directive", "prompt": "greet the user by name",
                                              "directiveId": d["id"],
                                              "instructions": {"AGENTS.md": "be brief"}}))["turn"]
    await tb.req("turnback/agent/transcript", {"agentId": "helper-1", "turn": n,
                                               "text": "looked at main.py", "final": True})
    await tb.req("turnback/workflow/set", {"tasks": [{"id": "t1", "title": "greet"}],
                                           "goals": [{"id": "g1"}]})
    wf = await tb.req("turnback/workflow/get", {})
    assert wf["tasks"] == [{"id": "t1", "title": "greet"}] and wf["agents"] == []
    (ws / "src" / "main.py").write_text("name = input()\nprint(f'hello {name}')\n")
    await tb.req("turnback/turn/capture", {"uris": [tb.uri("src/main.py")]})
    await tb.req("turnback/turn/respond", {"turn": n, "text": "done", "final": True})
    rec = await tb.req("turnback/directive/record", {"directiveId": d["id"], "turn": n,
                                                     "answer": "added a name prompt",
                                                     "patch": "--- a/src/main.py\n+++ b/src/main.py\n",
                                                     "consumed": [sub["id"]]})
    assert rec["attempts"][0]["turn"] == n
    await tb.req("turnback/turn/settle", {"turn": n})
    listed = await tb.req("turnback/directive/list", {"uri": tb.uri("src/main.py")})
    assert {x["id"] for x in listed["directives"]} == {d["id"], sub["id"]}
    # rewinding before the attempt drops it, returns the subdirective, clears the workflow
    boundary = {"kind": "beforeDirectiveAttempt", "directiveId": d["id"], "turn": n}
    cand = await tb.req("turnback/rewind/prepare", {"boundary": boundary})
    assert cand["directives"][0]["attemptsDiscarded"] == 1
    assert cand["workflowCleared"]["tasks"] == 1
    await tb.req("turnback/rewind/commit", {"boundary": boundary, "planHash": cand["planHash"]})
    assert (await tb.req("turnback/workflow/get", {}))["tasks"] == []
    assert (await tb.req("turnback/recovery/list", {}))["recovery"] == []
    exc = await tb.error("turnback/recovery/resolve", {"id": "nope", "action": "dismiss"})
    assert exc.data["code"] == "not-found"
    status = await tb.req("turnback/session/status", {})
    assert status["ownership"] == "owner" and status["liveGaps"] == 0

"""Issue 23 on the wire, through the real server: turnback/restore/prepare|commit, the rewind modes,
turnback/rewound to the client, the after-rewind hook off the loop, and bad input answered with
stable codes while the server keeps running."""

from __future__ import annotations

import json

from lsprotocol import types

from .conftest import Tb


async def _turn(tb: Tb, prompt: str, files: dict) -> int:
    n = (await tb.req("turnback/turn/begin", {"kind": "chat", "prompt": prompt}))["turn"]
    for rel, text in files.items():
        await tb.req("turnback/turn/capture", {"uris": [tb.uri(rel)], "phase": "before"})
        (tb.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (tb.root / rel).write_text(text)
        await tb.req("turnback/turn/capture", {"uris": [tb.uri(rel)]})
    await tb.req("turnback/turn/settle", {"turn": n})
    return n


async def _session(tb: Tb) -> None:
    await _turn(tb, "one", {"a.txt": "a1\n", "src/main.py": "print(1)\n"})
    await _turn(tb, "two", {"a.txt": "a2\n", "src/new.py": "new\n"})


async def test_restore_one_file_and_hear_of_it(ws, servers, flavour):
    tb = await servers(ws, flavour)
    await _session(tb)
    boundary = {"kind": "afterResponse", "turn": 1}
    params = {"paths": [tb.uri("a.txt")], "boundary": boundary}
    c = await tb.req("turnback/restore/prepare", params)
    assert c["operation"] == "restore" and c["discard"]["turnCount"] == 0
    assert [(f["uri"], f["action"]) for f in c["files"]] == [(tb.uri("a.txt"), "restore")]
    epochs = len(tb.epochs)
    out = await tb.req("turnback/restore/commit", {**params, "planHash": c["planHash"]})
    assert out["status"] == "committed" and out["restored"] == [tb.uri("a.txt")]
    assert (ws / "a.txt").read_text() == "a1\n" and (ws / "src/new.py").exists()
    note = await tb.until(lambda: tb.rewound and tb.rewound[-1], what="turnback/rewound")
    assert note["operation"] == "restore" and note["mode"] == "files" and note["boundary"] == boundary
    assert note["files"] == [tb.uri("a.txt")] and note["turnCount"] == 2
    info = await tb.req("turnback/session/info", {})
    assert note["sessionId"] == info["sessionId"]
    assert len(tb.epochs) == epochs  # the conversation did not change: no epoch
    # the same through workspace/executeCommand, and Redo offers the state before the restore
    groups = await tb.req(types.WORKSPACE_EXECUTE_COMMAND,
                          types.ExecuteCommandParams(command="turnback.redo.list", arguments=[{}]))
    assert groups["groups"][0]["changes"]["paths"] == ["a.txt"]


async def test_modes_on_the_wire(ws, servers):
    tb = await servers(ws, "vscode")
    await _session(tb)
    boundary = {"kind": "beforePrompt", "turn": 2}
    c = await tb.req("turnback/rewind/prepare", {"boundary": boundary, "mode": "conversation"})
    assert c["mode"] == "conversation" and {f["action"] for f in c["files"]} == {"kept"}
    out = await tb.req("turnback/rewind/commit", {"boundary": boundary, "planHash": c["planHash"],
                                                  "mode": "conversation"})
    assert out["status"] == "committed"
    await tb.until(lambda: tb.epochs, what="the epoch of a conversation rewind")
    note = await tb.until(lambda: tb.rewound and tb.rewound[-1], what="turnback/rewound")
    assert (note["operation"], note["mode"], note["files"]) == ("rewind", "conversation", [])
    assert (ws / "a.txt").read_text() == "a2\n"


async def test_bad_input_has_stable_codes_and_the_server_goes_on(ws, servers):
    tb = await servers(ws, "emacs")
    await _session(tb)
    b = {"kind": "afterResponse", "turn": 1}
    cases = [
        ("turnback/restore/prepare", {"paths": ["never.txt"], "boundary": b}, "unknown-path"),
        ("turnback/restore/prepare", {"paths": ["*.md"], "boundary": b}, "no-match"),
        ("turnback/restore/prepare", {"paths": ["file:///etc/passwd"], "boundary": b},
         "outside-workspace"),
        ("turnback/restore/prepare", {"paths": [tb.uri("a.txt")], "boundary": b,
                                      "dirty": [tb.uri("a.txt")]}, "unsaved-changes"),
        ("turnback/restore/prepare", {"paths": "a.txt", "boundary": b}, "invalid-params"),
        ("turnback/restore/commit", {"paths": ["a.txt"], "boundary": b}, "invalid-params"),
        ("turnback/rewind/prepare", {"boundary": b, "mode": "code"}, "invalid-params"),
        ("turnback/restore/prepare", {"paths": ["a.txt"], "boundary": {"kind": "afterResponse",
                                                                      "turn": 9}}, "unknown-turn"),
    ]
    for method, params, code in cases:
        err = await tb.error(method, params)
        assert err.data["code"] == code, (method, params, err.data)
    assert (ws / "a.txt").read_text() == "a2\n"
    assert (await tb.req("turnback/session/info", {}))["turnCount"] == 2


async def test_the_after_rewind_hook_runs_off_the_loop(ws, servers):
    gate, out = ws.parent / "gate", ws.parent / "hook-out.json"
    (ws / "turnback.toml").write_text(
        "[hooks]\n"
        f"after-rewind = \"while [ ! -e '{gate}' ]; do sleep 0.02; done; cat > '{out}'\"\n"
        "after-rewind-timeout = 60\n")
    tb = await servers(ws, "emacs")
    await _session(tb)
    b = {"kind": "beforePrompt", "turn": 2}
    c = await tb.req("turnback/rewind/prepare", {"boundary": b})
    result = await tb.req("turnback/rewind/commit", {"boundary": b, "planHash": c["planHash"]})
    assert result["status"] == "committed"  # answered while the hook still waits for its gate
    assert (await tb.req("turnback/session/info", {}))["turnCount"] == 1  # the loop is free
    assert not out.exists()
    gate.write_text("go")
    await tb.until(lambda: out.exists() and out.read_text().endswith("}"), timeout=30,
                   what="the after-rewind hook's document")
    doc = json.loads(out.read_text())
    assert doc["operation"] == "rewind" and doc["mode"] == "all" and doc["boundary"] == b
    assert sorted(doc["files"]) == ["a.txt", "src/new.py"] and doc["turnCount"] == 1
    assert doc["workspace"] == str(ws)

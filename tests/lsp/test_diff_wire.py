"""Issue 26 on the wire: `turnback/diff`, `turnback/image/read` (what an editor's diff view reads), the
keep that merges with `conflictMarkers`, and the steps of a candidate in words."""

from __future__ import annotations


async def test_diff_image_and_a_merging_keep(ws, servers):
    tb = await servers(ws, "vscode")
    await tb.turn("write", {"app.py": "a\nb\nc\nd\ne\nf\n"})
    await tb.turn("change the end", {"app.py": "a\nb\nc\nd\ne\nF\n"})
    await tb.req("turnback/turn/begin", {"kind": "chat", "prompt": "push"})
    await tb.req("turnback/turn/step", {"turn": 3, "kind": "shell", "scope": "crossing",
                                        "summary": "Bash: git push origin main"})
    await tb.req("turnback/turn/settle", {})
    (ws / "app.py").write_text("A\nb\nc\nd\ne\nF\n")  # the user's save between turns
    await tb.req("turnback/turn/capture", {"uris": [tb.uri("app.py")]})

    out = await tb.req("turnback/diff", {"turn": 2, "uri": tb.uri("app.py")})
    [change] = out["changes"]
    assert change["before"]["label"] == "before turn 2" and change["status"] == "modified"
    assert "-f\n+F\n" in change["diff"]
    since = await tb.req("turnback/diff", {"since": 2, "text": False})
    assert [(c["source"], c["path"]) for c in since["changes"]] == [("turn", "app.py"),
                                                                   ("user", "app.py")]
    image = await tb.req("turnback/image/read", {"image": change["before"]["image"]})
    assert image["text"] == "a\nb\nc\nd\ne\nf\n" and image["binary"] is False
    side = await tb.req("turnback/image/read", {"turn": 2, "uri": tb.uri("app.py"), "side": "after"})
    assert side["text"] == "a\nb\nc\nd\ne\nF\n"
    err = await tb.error("turnback/image/read", {"image": "0" * 32})
    assert err.data["code"] == "not-found"
    err = await tb.error("turnback/diff", {"turn": 1, "since": 1})
    assert err.data["code"] == "invalid-params"
    err = await tb.error("turnback/diff", {"turn": 1, "uri": "file:///etc/passwd"})
    assert err.data["code"] == "outside-workspace"

    boundary = {"kind": "afterResponse", "turn": 1}
    c = await tb.req("turnback/rewind/prepare", {"boundary": boundary})
    f = next(f for f in c["files"] if f["path"] == "app.py")
    assert f["merge"]["result"] == "merged" and f["merge"]["alsoChangedBy"] == [2]
    assert [s["what"] for s in c["steps"]] == ["ran \u201cgit push origin main\u201d"]
    out = await tb.req("turnback/rewind/commit", {"boundary": boundary, "planHash": c["planHash"],
                                                  "keepUserEdits": True, "conflictMarkers": True})
    assert out["status"] == "committed" and out["merged"] == [tb.uri("app.py")]
    assert (ws / "app.py").read_text() == "A\nb\nc\nd\ne\nf\n"

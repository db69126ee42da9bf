"""`branch` and `compare` from the store alone, and the property that compare's partition of the
parent's tail equals, bucket for bucket, what the live fork reported, on random sessions."""

from __future__ import annotations

import shutil

from forkkit import file_turn, fork, three_turns
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sessionkit import Agent

from turnback.effects.partition import BUCKETS
from turnback.store import lineage as records
from turnback.store.layout import Store
from turnback.travel.offline import compare, lineage


def _store(a: Agent) -> Store:
    return Store.open(a.root / ".turnback", kind=None, create=False)


def test_branch_draws_forks_frozen_marks_and_started_sessions(agent):
    a = agent()
    three_turns(a)
    root = a.wb.state.session_id
    b1 = fork(a, 2)["branch"]["sessionId"]
    started = a.wb.sessions.start(parent=b1)["sessionId"]
    view = lineage(_store(a))  # while the owner is still open: it only reads
    by_id = {s["sessionId"]: s for s in view["sessions"]}
    assert set(by_id) == {root, b1, started}
    assert by_id[root]["frozen"] and not by_id[b1]["frozen"] and by_id[started]["current"]
    edges = {(e["parentId"], e["sessionId"], e["kind"], e["forkTurn"]) for e in view["edges"]}
    assert edges == {(root, b1, "fork", 2), (b1, started, "start", None)}
    assert view["orphans"] == [] and view["interrupted"] == []


def test_an_edge_it_cannot_close_is_named_an_orphan(agent, tmp_path):
    a = agent()
    three_turns(a)
    root = a.wb.state.session_id
    fork(a, 1)
    a.close()
    copy = tmp_path / "copy"
    shutil.copytree(a.root, copy)
    records.remove_session(Store.open(copy / ".turnback", kind=None, create=False), root)
    view = lineage(Store.open(copy / ".turnback", kind=None, create=False))
    orphans = {o["sessionId"]: o for o in view["orphans"]}
    live = view["sessions"][0]
    assert orphans[live["sessionId"]]["parentId"] == root  # its parent's record is gone
    assert root in orphans and "no session record" in orphans[root]["reason"]  # seen in heads only


def test_compare_shows_the_shared_prefix_the_tails_and_the_files(agent):
    a = agent()
    three_turns(a)
    parent = a.wb.state.session_id
    out = fork(a, 1)
    report = out["report"]
    file_turn(a, "branch two", {"c.txt": "c"})
    branch = a.wb.state.session_id
    c = compare(_store(a), parent[:8], "current")
    assert c["sharedTurns"] == 1
    assert c["a"]["sessionId"] == parent and c["b"]["sessionId"] == branch
    assert [t["prompt"] for t in c["a"]["turns"]] == ["two", "three"]
    assert [t["prompt"] for t in c["b"]["turns"]] == ["branch two"]
    assert c["a"]["effects"] == report["effects"]
    assert c["liveReport"] == {"side": "a", "effects": report["effects"], "agrees": True,
                               "forkTurn": 1}
    paths = {f["path"]: f for f in c["files"]}
    assert set(paths) == {"a.txt", "b.txt", "c.txt"}
    assert paths["a.txt"]["a"] == "absent" or paths["a.txt"]["a"] != paths["a.txt"]["b"]


SCOPES = st.sampled_from(["host", "crossing", "unknown", "none", "sideways"])
KINDS = st.sampled_from(["file-write", "shell", "network-send", "network-fetch", "read", "think",
                         "other", "teleport"])
STEP = st.fixed_dictionaries({
    "kind": KINDS, "scope": SCOPES,
    "inverse": st.none() | st.fixed_dictionaries({"kind": st.just("undo"),
                                                  "scope": st.sampled_from(["host", "crossing",
                                                                            "unknown", "none"])}),
    "held": st.booleans(), "compensate": st.booleans(),
    "file": st.none() | st.sampled_from(["a.txt", "b.txt", "c/d.txt"]),
})
SESSION = st.lists(st.lists(STEP, max_size=4), min_size=2, max_size=5)


def _play(a: Agent, session) -> None:
    ids: list[str] = []
    for n, turn in enumerate(session, 1):
        a.begin(f"turn {n}")
        for i, s in enumerate(turn):
            params = {"kind": s["kind"], "scope": s["scope"], "summary": f"{n}.{i}"}
            if s["scope"] == "sideways":
                params.pop("scope")  # absent scope: counts as crossing
            if s["inverse"] is not None:
                params["inverse"] = s["inverse"]
            if s["held"]:
                params["held"] = True
            if s["compensate"] and ids:
                params["compensates"] = ids[(n * 7 + i) % len(ids)]
            if s["file"] is not None:
                a.write(s["file"], f"{n}.{i}")
                params["uris"] = [a.uri(s["file"])]
            ids.append(a.step(**params))
        a.settle()


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(session=SESSION, data=st.data())
def test_compare_reproduces_the_live_fork_partition_on_random_sessions(tmp_path_factory, session,
                                                                       data):
    root = tmp_path_factory.mktemp("prop")
    a = Agent(root)
    try:
        _play(a, session)
        k = data.draw(st.integers(min_value=1, max_value=len(session)), label="fork turn")
        parent = a.wb.state.session_id
        report = a.wb.fork.prepare({"turn": k})
        live = report["effects"]
        assert set(live) == set(BUCKETS)
        if report.get("refusal"):
            # A refused fork still reports; the offline reader computes the same partition.
            c = compare(_store(a), parent, parent)
            assert c["sharedTurns"] == len(session)
            from turnback.travel.offline import Reader, offline_effects

            assert offline_effects(Reader(_store(a)).live, k) == live
            return
        out = a.wb.fork.confirm({"turn": k, "hash": report["hash"]})
        assert out["status"] == "forked"
        a.close()
        c = compare(_store(a), parent, out["branch"]["sessionId"])  # after the owner is gone
        assert c["sharedTurns"] == k
        assert c["a"]["effects"] == live, (c["a"]["effects"], live)
        assert c["liveReport"]["agrees"]
    finally:
        try:
            a.close()
        except Exception:
            pass

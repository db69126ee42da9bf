"""Property: for random sessions and a random boundary, after the rewind every captured path without a
gap holds exactly the bytes it had at that boundary."""

from __future__ import annotations

import tempfile
from pathlib import Path

from sessionkit import Agent
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

PATHS = ["a.txt", "b.txt", "sub/c.txt", "sub/deep/d.txt"]
content = st.one_of(st.none(), st.sampled_from(["x", "y", "zz", ""]), st.binary(max_size=40))
edits = st.dictionaries(st.sampled_from(PATHS), content, max_size=3)
turn_plan = st.tuples(edits, st.booleans(), edits)  # (agent edits, captured by hooks?, user edits after)


def disk(root: Path) -> dict:
    out = {}
    for rel in PATHS:
        p = root / rel
        if p.is_file():
            out[rel] = p.read_bytes()
    return out


def apply(a: Agent, rel: str, data, *, hooks: bool) -> None:
    path = a.root / rel
    if data is None:
        if path.exists():
            a.delete(rel, capture=hooks)
        return
    a.write(rel, data, capture=hooks)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(initial=edits, turns=st.lists(turn_plan, min_size=1, max_size=5), pick=st.integers(0, 100),
       after_response=st.booleans(), kind=st.sampled_from(["heads", "pid"]))
def test_rewind_restores_every_captured_path_to_its_boundary_image(initial, turns, pick,
                                                                   after_response, kind):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for rel, data in initial.items():
            if data is not None:
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_bytes(data if isinstance(data, bytes) else data.encode())
        a = Agent(root, store_kind=kind)
        try:
            at_start = []  # disk image when each turn began (after the user's edits before it)
            for agent_edits, hooks, user_edits in turns:
                a.begin("turn")
                at_start.append(disk(root))
                for rel, data in agent_edits.items():
                    apply(a, rel, data, hooks=hooks)
                a.settle()
                at_settle = disk(root)
                for rel, data in user_edits.items():  # the user between turns, some saves seen
                    apply(a, rel, data, hooks=False)
                    a.wb.turns.capture_rels([rel]) if hooks else None
            n = pick % len(turns) + 1
            boundary = {"kind": "afterResponse" if after_response else "beforePrompt", "turn": n}
            keep = n if after_response else n - 1
            c = a.wb.rewind.prepare({"boundary": boundary})
            out = a.wb.rewind.commit({"boundary": boundary, "planHash": c["planHash"]})
            if keep == len(turns):  # the current state: nothing to rewind, no epoch
                assert c["noop"] and c["files"] == [] and out == {"status": "nothing-to-do"}, out
            else:
                assert out["status"] == "committed", out
            gapped = {g["uri"].rsplit(str(root), 1)[-1].lstrip("/") for g in c["gaps"] if g.get("uri")}
            if keep < len(turns):
                expected = at_start[keep]  # C(keep+1)
                now = disk(root)
                planned = {f["path"] for f in c["files"]}
                for rel in planned - gapped:
                    assert now.get(rel) == expected.get(rel), (rel, boundary)
                # every path a discarded turn changed is in the plan: nothing is silently skipped
                changed = {rel for rel in PATHS if expected.get(rel) != at_settle.get(rel)}
                assert changed <= planned | gapped, (changed - planned, boundary)
            assert a.wb.state.turn_count == keep
        finally:
            a.close()

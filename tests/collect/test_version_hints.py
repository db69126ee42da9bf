"""The repack's delta hints come from the session's checkpoints in steps (`iter_version_hints`):
each older image points at its newer one, every image names a path it had, and a session of
many entries is read over several steps, not one hold of the loop."""

from __future__ import annotations

import hashlib

from turnback.collect.repackplan import HINT_STEP, iter_version_hints
from turnback.model.session import SessionState
from turnback.timeline.reducer import apply


def _d(tag: str) -> str:
    return hashlib.sha256(tag.encode()).hexdigest()[:32]


def _drive(job):
    steps = 0
    try:
        while True:
            next(job)
            steps += 1
    except StopIteration as done:
        return done.value, steps


def test_hints_follow_each_file_from_older_to_newer_over_several_steps():
    state = SessionState(session_id="s", created=0.0)
    seq = 0

    def op(**kw):
        nonlocal seq
        seq += 1
        apply(state, {"seq": seq, "ts": float(seq), **kw})

    files = HINT_STEP + 500
    op(op="begin", n=1, kind="prompt", prompt="p")
    for i in range(files):
        op(op="image", rel=f"f{i}", before=_d(f"{i}.0"), after=_d(f"{i}.1"), turn=1)
    op(op="settle", turn=1, status="settled")
    op(op="image", rel="f0", before=_d("0.1"), after=_d("0.2"))  # a loose change after the turn
    (hints, names), steps = _drive(iter_version_hints(state))
    assert steps >= files // HINT_STEP  # never the whole session in one step
    assert hints[_d("7.0")] == _d("7.1") and hints[_d("0.1")] == _d("0.2")
    assert len(hints) == files + 1
    assert names[_d("7.1")] == "f7" and names[_d("0.2")] == "f0"

"""A publication inside a job is steps (issue 24, item 5): a turn or a shard a step, then its batch's
commit in slices, so the first publication after a big sweep, and an agent's SessionStart parking a
big session, never hold the owner's loop in one piece. Drained, it publishes exactly what `publish`
would: the same body, the same head."""

from __future__ import annotations

from turnback.model.known import SHARDS


def _drain(job):
    steps = 0
    while True:
        try:
            next(job)
            steps += 1
        except StopIteration as done:
            return done.value, steps


def _many_files(a, n=400):
    for i in range(n):
        a.write(f"src/f{i:04}.txt", f"file {i}\n")


def test_a_publication_is_a_step_per_shard_and_its_body_is_the_same(agent):
    a = agent()
    a.turn("first", {"a.txt": "1"})
    _many_files(a)
    a.begin("second")  # the pre-turn sweep learns 400 files: every shard of the known map changes
    book = a.wb.book
    expected = book.codec.write(book.state)  # what a synchronous write names (nothing new to store)
    seq, steps = _drain(book.iter_publish())
    assert steps >= len(book.state.turns)  # a step per turn at least
    assert book.head.seq == seq and book.head.body == expected


def test_the_first_publication_after_a_big_sweep_yields_for_every_shard(agent):
    a = agent()
    a.turn("first", {"a.txt": "1"})
    _many_files(a)
    book = a.wb.book
    for rel in [f"src/f{i:04}.txt" for i in range(400)]:
        book.state.known[rel] = book.store.objects.put(f"learnt {rel}".encode())
    _body, steps = _drain(book.iter_write_state(book.state))
    assert steps >= SHARDS  # no shard left unchanged: each one its own step


def test_session_start_is_a_job_and_parks_the_old_session(agent):
    a = agent()
    a.turn("first", {"a.txt": "1"})
    old = a.wb.state.session_id
    made, steps = _drain(a.wb.sessions.start_job(meta={"agent": "x"}))
    assert steps > 0 and made["sessionId"] != old and made["current"] is True
    parked = a.wb.sessions.log({"sessionId": old})
    assert [t["prompt"] for t in parked["turns"]] == ["first"]

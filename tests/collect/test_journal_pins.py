"""The collector's journal pins, read on from where the last look stopped (a hook storm's journal
was re-read whole at every look, 170 ms of the owner's loop each time), and read anew whenever the
journal was cut back: a reset journal that grew past the old offset must not hide its new frames."""

from turnback.collect.roots import JournalPins, journal_pins
from turnback.store import journal as journal_mod
from turnback.store.journal import Journal
from turnback.store.layout import Store


def _d(n: int) -> str:
    return f"{n:032x}"


def _store(tmp_path):
    store = Store.open(tmp_path / ".turnback")
    path = store.journal_path("s1")
    j, _frames, _torn = Journal.open(path)
    return store, path, j


def test_new_frames_are_read_on_from_the_last_look(tmp_path, monkeypatch):
    store, path, j = _store(tmp_path)
    try:
        j.append({"op": "image", "after": _d(1)})
        reader, pins = JournalPins(), set()
        reader.read(store, pins)
        assert pins == {_d(1)}
        starts = []
        real = journal_mod.scan
        monkeypatch.setattr(journal_mod, "scan", lambda p, start=None, **kw: starts.append(start)
                            or real(p, start=start, **kw))
        j.append({"op": "image", "after": _d(2)})
        reader.read(store, pins)
        assert pins == {_d(1), _d(2)}
        assert starts and starts[-1] is not None  # read from the old end, not from the start
        reader.read(store, pins)  # nothing new: not read at all
        assert len(starts) == 1
    finally:
        j.close()


def test_a_journal_cut_back_and_grown_again_is_read_whole(tmp_path):
    store, path, j = _store(tmp_path)
    try:
        j.append({"op": "image", "after": _d(1)})
        reader, pins = JournalPins(), set()
        reader.read(store, pins)
        j.reset()  # published: emptied; then more than before is written
        for n in range(10, 14):
            j.append({"op": "image", "after": _d(n), "pad": "x" * 40})
        assert path.stat().st_size > 0
        reader.read(store, pins)
        assert {_d(n) for n in range(10, 14)} <= pins  # the frames before the old end too
        assert pins == journal_pins(store) | {_d(1)}
    finally:
        j.close()


def test_a_long_journal_is_read_in_chunks_and_whole_by_the_end(tmp_path):
    store, path, j = _store(tmp_path)
    try:
        n = JournalPins.CHUNK * 3 + 7
        for i in range(n):
            j.append({"op": "image", "after": _d(i)})
        reader, pins = JournalPins(), set()
        steps = 0
        for _ in reader.iter_read(store, pins):
            steps += 1
            j.append({"op": "image", "after": _d(100_000 + steps)})  # written while it reads
        assert steps == 3  # yielded between chunks, never in the step that ends
        assert pins == journal_pins(store)  # every frame, those written meanwhile too
    finally:
        j.close()


def test_big_frames_are_read_a_few_at_a_step(tmp_path):
    """A sweep's `seen` frames hold thousands of images each: a chunk is bounded in bytes too, so
    one step reads a few of them, never 512 (13 to 20 ms of the loop each)."""
    store, path, j = _store(tmp_path)
    try:
        frames = 40
        for f in range(frames):
            j.append({"op": "seen", "images": {f"p{f}/{i}": _d(f * 1000 + i) for i in range(400)}})
        per_frame = path.stat().st_size // frames
        assert per_frame * 2 < JournalPins.CHUNK_BYTES < per_frame * frames // 4
        reader, pins = JournalPins(), set()
        steps = sum(1 for _ in reader.iter_read(store, pins))
        assert steps >= frames * per_frame // JournalPins.CHUNK_BYTES - 1
        assert pins == journal_pins(store) and len(pins) == frames * 400
    finally:
        j.close()

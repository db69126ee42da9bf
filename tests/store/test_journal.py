import os
import struct

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from turnback.errors import CorruptStore, NewerFormat
from turnback.store.testing import faultplan
from turnback.store import journal
from turnback.store.journal import HEADER, HEADER_LEN, Journal

frames_st = st.lists(
    st.dictionaries(st.sampled_from(["op", "path", "n", "data"]),
                    st.integers(0, 1000) | st.text(max_size=12) | st.binary(max_size=40), min_size=1),
    min_size=1, max_size=6)


def write_frames(path, frames):
    j, _, _ = Journal.open(path)
    for f in frames:
        j.append(f)
    j.sync()
    j.close()
    return path.read_bytes()


def test_roundtrip_and_reopen_append(tmp_path):
    p = tmp_path / "s.wal"
    j, frames, torn = Journal.open(p)
    assert frames == [] and torn is None and p.read_bytes() == HEADER
    j.append({"a": 1})
    j.append({"b": b"\x00"})
    j.sync()
    j.close()
    j, frames, torn = Journal.open(p)
    assert frames == [{"a": 1}, {"b": b"\x00"}] and torn is None and j.count == 2
    j.append({"c": 3})
    j.close()
    assert Journal.open(p)[1] == [{"a": 1}, {"b": b"\x00"}, {"c": 3}]
    assert os.stat(p).st_mode & 0o777 == 0o600


def test_reset_empties_durably(tmp_path):
    p = tmp_path / "s.wal"
    j, _, _ = Journal.open(p)
    j.append({"a": 1})
    j.reset()
    j.append({"b": 2})
    j.close()
    assert Journal.open(p)[1] == [{"b": 2}]


@pytest.mark.slow
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(frames_st)
def test_cut_at_every_offset_replays_a_prefix(tmp_path, frames):
    src = tmp_path / "full.wal"
    src.unlink(missing_ok=True)
    data = write_frames(src, frames)
    boundaries = [HEADER_LEN]
    for f in frames:
        boundaries.append(boundaries[-1] + len(journal.frame_bytes(f)))
    cut = tmp_path / "cut.wal"
    for n in range(len(data) + 1):
        cut.unlink(missing_ok=True)
        cut.write_bytes(data[:n])
        s = journal.scan(cut)
        assert s.frames == frames[:len(s.frames)]
        kept = max(i for i, b in enumerate(boundaries) if b <= max(n, HEADER_LEN))
        assert len(s.frames) == kept
        assert (s.torn is None) == (n in boundaries or n == 0)
        j, replayed, torn = Journal.open(cut)
        j.append({"after": n})
        j.close()
        again, replayed, _torn = Journal.open(cut)
        again.close()  # one open journal per offset ran a worker out of descriptors (select())
        assert replayed == frames[:kept] + [{"after": n}]


def test_torn_tail_is_cut_and_reported(tmp_path):
    p = tmp_path / "s.wal"
    write_frames(p, [{"a": 1}, {"b": 2}])
    good = p.stat().st_size
    with open(p, "ab") as f:
        f.write(b"\x00\x00\x00\x10garbage")
    j, frames, torn = Journal.open(p)
    j.close()
    assert frames == [{"a": 1}, {"b": 2}]
    assert torn.offset == good and torn.dropped_bytes == 4 + 7 and str(p) == torn.path
    assert p.stat().st_size == good


def test_flipped_byte_keeps_the_prefix_before_it(tmp_path):
    p = tmp_path / "s.wal"
    write_frames(p, [{"a": 1}, {"b": 2}, {"c": 3}])
    first_end = HEADER_LEN + len(journal.frame_bytes({"a": 1}))
    b = bytearray(p.read_bytes())
    b[first_end + 14] ^= 1  # inside the second frame's payload
    p.write_bytes(bytes(b))
    j, frames, torn = Journal.open(p)
    j.close()
    assert frames == [{"a": 1}] and torn.offset == first_end


def test_bad_header_is_not_destroyed(tmp_path):
    p = tmp_path / "s.wal"
    p.write_bytes(b"NOTAJOURNAL")
    with pytest.raises(CorruptStore):
        Journal.open(p)
    assert p.read_bytes() == b"NOTAJOURNAL"
    p.write_bytes(b"TBJ1" + struct.pack(">I", 2))
    with pytest.raises(NewerFormat):
        Journal.open(p)


def test_failed_append_is_cut_back(tmp_path):
    p = tmp_path / "s.wal"
    j, _, _ = Journal.open(p)
    j.append({"a": 1})
    with faultplan.faults(fail_at=1):
        with pytest.raises(faultplan.FaultInjected):
            j.append({"lost": True})
    j.append({"b": 2})
    j.sync()
    j.close()
    assert Journal.open(p)[1] == [{"a": 1}, {"b": 2}]


def test_append_that_cannot_be_cut_back_breaks_the_handle(tmp_path):
    p = tmp_path / "s.wal"
    j, _, _ = Journal.open(p)
    with faultplan.faults(fail_at=1, sticky=True):
        with pytest.raises(faultplan.FaultInjected):
            j.append({"a": 1})
    with pytest.raises(CorruptStore, match="reopen"):
        j.append({"b": 2})
    j.close()


def test_closed_journal_refuses(tmp_path):
    j, _, _ = Journal.open(tmp_path / "s.wal")
    j.close()
    with pytest.raises(ValueError):
        j.append({})


def test_half_written_frame_is_cut_back(tmp_path, monkeypatch):
    p = tmp_path / "s.wal"
    j, _, _ = Journal.open(p)
    j.append({"a": 1})
    real_write = os.write

    def half_then_fail(fd, data):
        real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_fail)
    with pytest.raises(OSError):
        j.append({"big": b"x" * 100})
    monkeypatch.setattr(os, "write", real_write)
    j.append({"b": 2})
    j.sync()
    j.close()
    j, frames, torn = Journal.open(p)
    j.close()
    assert frames == [{"a": 1}, {"b": 2}] and torn is None


def test_a_sync_with_nothing_new_since_the_last_one_does_not_fsync_again(tmp_path):
    p = tmp_path / "s.wal"
    Journal.open(p)[0].close()
    j, _, _ = Journal.open(p)
    fd = j._require_open()
    with faultplan.faults() as plan:
        j.sync()  # the first after the open: the page cache may hold what a dead process wrote
        j.sync()
        j.append({"a": 1})
        j.sync()
        j.sync()
    assert plan.log.count(f"fsync {fd}") == 2, plan.log
    with faultplan.faults(fail_at=2) as plan:  # the append, then its fsync fails
        j.append({"b": 2})
        with pytest.raises(faultplan.FaultInjected):
            j.sync()
    with faultplan.faults() as plan:
        j.sync()  # a failed fsync promised nothing: the next one syncs
        j.reset()
        j.sync()  # the reset synced the emptied journal
    assert plan.log.count(f"fsync {fd}") == 2, plan.log
    j.close()
    assert Journal.open(p)[1] == []


def test_a_failed_append_leaves_the_next_sync_to_sync(tmp_path):
    p = tmp_path / "s.wal"
    j, _, _ = Journal.open(p)
    j.append({"a": 1})
    j.sync()
    fd = j._require_open()
    with faultplan.faults(fail_at=1):
        with pytest.raises(faultplan.FaultInjected):
            j.append({"lost": True})
    with faultplan.faults() as plan:
        j.sync()  # the cut-back truncate is not durable until synced
    assert plan.log.count(f"fsync {fd}") == 1, plan.log
    j.close()

"""Defect 11: valid frames after a bad one are damage, not a torn tail. The bytes are kept as
evidence, the open reports `corrupt-store`, and nothing is cut silently."""

import os

from turnback.store import fsck as fsck_mod, journal
from turnback.store.journal import HEADER_LEN, FRAME_HEAD, Journal
from turnback.workbench import Workbench


def seven_frames(path):
    j, _, _ = Journal.open(path)
    for i in range(7):
        j.append({"op": "x", "n": i, "data": "payload %d" % i})
    j.sync()
    j.close()
    return path.read_bytes()


def flip_in_frame(data: bytes, index: int) -> bytes:
    pos = HEADER_LEN
    for _ in range(index):
        length, _sum = FRAME_HEAD.unpack_from(data, pos)
        pos += FRAME_HEAD.size + length
    at = pos + FRAME_HEAD.size + 2  # inside the payload
    return data[:at] + bytes([data[at] ^ 0x10]) + data[at + 1:]


def test_flipped_bit_in_frame_one_of_seven_is_damage_and_kept(tmp_path):
    p = tmp_path / "s.wal"
    damaged = flip_in_frame(seven_frames(p), 1)
    p.write_bytes(damaged)
    s = journal.scan(p)
    assert s.torn is None and s.damage is not None and s.damage.later_frames == 5
    j, frames, report = Journal.open(p)
    j.close()
    assert [f["n"] for f in frames] == [0]  # the replay is still a prefix
    assert isinstance(report, journal.Damage) and report.to_wire()["code"] == "corrupt-store"
    kept = report.evidence
    assert kept and open(kept, "rb").read() == damaged  # every byte kept
    assert [f["n"] for f in journal.salvage_frames(kept)] == [0, 2, 3, 4, 5, 6]
    assert [f["n"] for f in Journal.open(p)[1]] == [0]  # reopening finds no new damage
    assert len([n for n in os.listdir(tmp_path) if journal.is_evidence(n)]) == 1


def test_a_torn_last_frame_is_still_a_tear(tmp_path):
    p = tmp_path / "s.wal"
    data = seven_frames(p)
    p.write_bytes(data[:-3])
    j, frames, report = Journal.open(p)
    j.close()
    assert len(frames) == 6 and isinstance(report, journal.TornTail)
    assert not [n for n in os.listdir(tmp_path) if journal.is_evidence(n)]


def test_workbench_reports_the_damage_and_goes_on(tmp_path):
    wb = Workbench.open(tmp_path)
    wb.run(wb.turns.begin_job({"prompt": "one"}))
    wb.book.publish()
    for i in range(6):
        wb.turns.respond({"turn": 1, "text": f"chunk {i} "})
    wb.book.sync()
    path = wb.store.journal_path(wb.state.session_id)
    wb.book.journal.close()
    wb.book.journal = None
    wb.book.owner.release()
    data = path.read_bytes()
    path.write_bytes(flip_in_frame(data, 2))
    wb = Workbench.open(tmp_path)
    try:
        damage = wb.open_report.get("corruptJournal")
        assert damage and damage["code"] == "corrupt-store" and damage["unreplayedFrames"] >= 3
        assert wb.open_report["tornJournal"] is False
        assert wb.info()["opened"]["corruptJournal"]["evidence"] == damage["evidence"]
        wb.turns.respond({"turn": 1, "text": "work goes on"})  # the store is usable
        report = fsck_mod.fsck(wb.store.path)
        assert any("evidence" in p.what and p.severity == "warning" for p in report.problems)
    finally:
        wb.close()

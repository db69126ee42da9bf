"""Defect 9: one damaged recovery record is reported by name (`corrupt-store`), kept until
dismissed, and stops nothing else: capture, begin, status and the other records go on."""

import pytest

from turnback.errors import CorruptStore
from turnback.store.records import write_record


def _record(store, rid, rel):
    write_record(store.recovery_dir / f"{rid}.cbor", "recovery", {
        "id": rid, "operation": "rewind", "created": 1.0, "paths": [rel],
        "reason": "disk gone", "backups": []})


def test_one_damaged_record_stops_nothing(agent):
    a = agent()
    a.turn("one", {"a.txt": "a1"})
    store = a.wb.store
    _record(store, "good", "a.txt")
    _record(store, "bad", "a.txt")
    path = store.recovery_dir / "bad.cbor"
    data = bytearray(path.read_bytes())
    data[10] ^= 0x01  # one flipped bit
    path.write_bytes(bytes(data))

    assert a.wb.status()["recovery"] == 2
    assert a.wb.info()["recovery"] == 2
    listed = {r["id"]: r for r in a.wb.recovery.list()["recovery"]}
    assert listed["good"]["paths"] and not listed["good"].get("damaged")
    assert listed["bad"]["damaged"] is True and listed["bad"]["code"] == "corrupt-store"
    assert "damaged" in listed["bad"]["reason"]

    a.turn("two", {"b.txt": "b1"})  # begin, capture and settle go on
    with pytest.raises(CorruptStore):
        a.wb.recovery.resolve({"id": "bad", "action": "retry"})
    assert path.exists()  # kept as evidence until the user dismisses it
    out = a.wb.recovery.resolve({"id": "bad", "action": "dismiss"})
    assert out["status"] == "dismissed" and [r["id"] for r in out["recovery"]] == ["good"]
    assert not path.exists()
    assert a.wb.recovery.resolve({"id": "good", "action": "dismiss"})["recovery"] == []

"""Lease.check trusts an unchanged record without reading it again (a stat instead of an open, a
read and a decode), and never trusts one that changed: a takeover, a release, a removal, a link, an
in-place rewrite in the coarse-timestamp window."""

from __future__ import annotations

import os

import pytest

from turnback.errors import NotOwner
from turnback.store import fs
from turnback.store.ownership import holder
from turnback.store.ownership.lease import Lease
from turnback.store.ownership.owners import takeover


def _count_reads(monkeypatch) -> list:
    opened = []
    real = fs.open_read

    def counting(path):
        opened.append(str(path))
        return real(path)
    monkeypatch.setattr(fs, "open_read", counting)
    monkeypatch.setattr(fs.read, "open_read", counting)  # where read_file and its kin open
    return opened


def _settle_timestamps(monkeypatch):
    """Make the freshly written record count as old: the racy window is what the test is not about."""
    monkeypatch.setattr(holder, "RACY_SECONDS", 0.0)


def test_an_unchanged_record_is_checked_by_its_stat_alone(store, monkeypatch):
    a = Lease.acquire(store.path, ttl=3600)
    _settle_timestamps(monkeypatch)
    reads = _count_reads(monkeypatch)
    a.check()
    assert len(reads) == 1  # the first check reads the record
    for _ in range(5):
        a.check()
    assert len(reads) == 1, "an unchanged lease record was read again"


def test_a_takeover_after_a_trusted_check_is_caught(store, monkeypatch):
    a = Lease.acquire(store.path, ttl=3600)
    _settle_timestamps(monkeypatch)
    a.check()
    a.check()
    takeover(store.path, "heads", confirm=True, ttl=3600)
    with pytest.raises(NotOwner):
        a.check()


def test_a_renewal_is_read_once_then_trusted(store, monkeypatch):
    a = Lease.acquire(store.path, ttl=3600)
    _settle_timestamps(monkeypatch)
    a.check()
    a.renew()
    reads = _count_reads(monkeypatch)
    a.check()
    a.check()
    assert len(reads) == 1


def test_a_record_rewritten_in_place_within_the_racy_window_is_read_again(store, monkeypatch):
    a = Lease.acquire(store.path, ttl=3600)
    a.check()  # just written: its timestamps are too fresh to vouch for it
    assert a._seen[0] is None
    raw = store.lease_path.read_bytes()
    with open(store.lease_path, "r+b") as fh:  # same inode, same size: only the bytes differ
        fh.write(bytes([raw[0] ^ 0xFF]) + raw[1:])
    with pytest.raises(NotOwner):
        a.check()


def test_a_removed_or_linked_record_is_refused_after_a_trusted_check(store, monkeypatch, tmp_path):
    a = Lease.acquire(store.path, ttl=3600)
    _settle_timestamps(monkeypatch)
    a.check()
    saved = store.lease_path.read_bytes()
    os.remove(store.lease_path)
    with pytest.raises(NotOwner):
        a.check()
    outside = tmp_path / "elsewhere.cbor"
    outside.write_bytes(saved)  # the very record, reached through a link: never followed
    os.symlink(outside, store.lease_path)
    with pytest.raises(NotOwner):
        a.check()


def test_an_expired_lease_is_refused_though_its_record_is_unchanged(store, monkeypatch):
    now = [1000.0]
    a = Lease.acquire(store.path, ttl=30, clock=lambda: now[0])
    _settle_timestamps(monkeypatch)
    a.check()
    a.check()
    now[0] += 31
    with pytest.raises(NotOwner):
        a.check()

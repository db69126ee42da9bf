"""The owner's lease renewal writes its record on a helper thread: the write (a temp file, its fsync,
a rename) is file-system work the loop must not wait for (a rename behind a busy journal held it
346 ms). A renewal that finds the lease taken still makes the workbench an observer, on the loop."""

from __future__ import annotations

import asyncio
import threading

from turnback.errors import NotOwner
from turnback.lsp.server import TurnbackServer
from turnback.store.ownership.lease import Lease
from turnback.workbench import Workbench
from turnback.workbench.options import Options

TTL = 1.5  # the loop renews every TTL / 3 = 0.5 s


async def test_a_renewal_whose_write_is_stuck_leaves_the_loop_free(tmp_path, monkeypatch):
    wb = Workbench.open(tmp_path, Options(lease_ttl=TTL))
    server = TurnbackServer()
    server.wb = wb
    loop_thread = threading.current_thread()
    entered, gate = threading.Event(), threading.Event()
    writers: list[threading.Thread] = []
    gate_opened_in_time: list[bool] = []
    written: list[float] = []
    real_write = Lease._write

    def stuck_write(self, **kw):
        if not entered.is_set() and not kw.get("released"):
            writers.append(threading.current_thread())
            entered.set()
            gate_opened_in_time.append(gate.wait(10))  # the loop's thread would wait here 10 s
            real_write(self, **kw)
            written.append(self.expires)
            return
        real_write(self, **kw)

    monkeypatch.setattr(Lease, "_write", stuck_write)
    before = wb.book.owner.expires
    task = asyncio.get_running_loop().create_task(server.lease.run())
    try:
        assert await asyncio.to_thread(entered.wait, 10), "no renewal came"
        assert writers and writers[0] is not loop_thread
        ticks = 0
        for _ in range(3):  # the loop runs other work while the write is stuck
            await asyncio.sleep(0)
            ticks += 1
        gate.set()
        while not written:
            await asyncio.sleep(0.01)
        assert gate_opened_in_time == [True] and ticks == 3 and written[0] > before
        assert wb.is_owner
    finally:
        gate.set()
        server.closed = True
        task.cancel()
        wb.close()


async def test_a_renewal_that_finds_the_lease_taken_makes_the_workbench_an_observer(tmp_path,
                                                                                     monkeypatch):
    wb = Workbench.open(tmp_path, Options(lease_ttl=TTL))
    server = TurnbackServer()
    server.wb = wb
    lost_on: list[threading.Thread] = []
    wb.book.on_lost.append(lambda: lost_on.append(threading.current_thread()))

    def taken(self):
        raise NotOwner("this process no longer owns the store: taken over at epoch 9")

    monkeypatch.setattr(Lease, "renew", taken)
    monkeypatch.setattr(Lease, "check", lambda self: None)  # the second's look finds nothing
    task = asyncio.get_running_loop().create_task(server.lease.run())
    try:
        while wb.is_owner:
            await asyncio.sleep(0.01)
        assert lost_on == [threading.current_thread()]  # handled on the loop, once
    finally:
        server.closed = True
        task.cancel()
        monkeypatch.undo()
        wb.close()

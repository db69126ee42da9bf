"""An editor's save (`didSave`, a watched change) is captured as a job: the file is read and stored,
and the journal synced, on helper threads while the loop serves others (a 1 MiB save held the loop
for its fsyncs). The server holds its mutation lock for the whole capture, so two saves of one file
are recorded in the order they arrived, whatever the helpers' timing."""

from __future__ import annotations

import asyncio
import threading

from turnback.capture.recorder import Recorder
from turnback.lsp.editor import capture_uris, opened
from turnback.lsp.server import TurnbackServer
from turnback.workbench import Workbench


async def test_a_save_reads_off_the_loop_and_a_later_save_is_recorded_after_it(tmp_path,
                                                                              monkeypatch):
    wb = Workbench.open(tmp_path)
    server = TurnbackServer()
    server.wb = wb
    server.kick_collection = lambda: None  # this test is about the capture alone
    loop_thread = threading.current_thread()
    target = tmp_path / "a.txt"
    target.write_text("one\n")
    entered, gate = threading.Event(), threading.Event()
    readers: list[threading.Thread] = []
    opened_in_time: list[bool] = []
    real_read = Recorder._read

    def held_read(self, rel):
        readers.append(threading.current_thread())
        got = real_read(self, rel)
        if not entered.is_set():  # the first save has read "one"; it waits before it records
            entered.set()
            opened_in_time.append(gate.wait(10))  # the loop's thread would wait here 10 s
        return got

    monkeypatch.setattr(Recorder, "_read", held_read)
    uri = wb.ws.to_uri("a.txt")
    loop = asyncio.get_running_loop()
    try:
        first = loop.create_task(capture_uris(server, [uri], "after"))
        assert await asyncio.to_thread(entered.wait, 10), "the first save never read"
        target.write_text("two\n")
        second = loop.create_task(capture_uris(server, [uri], "after"))
        ticks = 0
        for _ in range(5):  # the loop runs on while the first read is held
            await asyncio.sleep(0)
            ticks += 1
        assert len(readers) == 1, "the second save read before the first was recorded"
        gate.set()
        await asyncio.gather(first, second)
        assert opened_in_time == [True] and ticks == 5
        assert len(readers) == 2 and all(t is not loop_thread for t in readers)
        digest = wb.store.objects.hasher.digest(b"two\n")
        assert wb.state.known.get("a.txt") == digest  # the later save's image is the last one
    finally:
        gate.set()
        server.closed = True
        wb.close()


async def test_an_opened_file_the_store_did_not_know_is_read_off_the_loop(tmp_path, monkeypatch):
    """`didOpen` of a file the store does not know yet learns its image as a job: the read and the
    store's write on a helper thread while the loop runs on (it was read and stored on the loop)."""
    wb = Workbench.open(tmp_path)
    server = TurnbackServer()
    server.wb = wb
    loop_thread = threading.current_thread()
    (tmp_path / "new.txt").write_text("opened\n")
    entered, gate = threading.Event(), threading.Event()
    readers: list[threading.Thread] = []
    real_read = Recorder._read

    def held_read(self, rel):
        readers.append(threading.current_thread())
        entered.set()
        assert gate.wait(10), "the test never opened the gate"
        return real_read(self, rel)

    monkeypatch.setattr(Recorder, "_read", held_read)
    loop = asyncio.get_running_loop()
    try:
        assert "new.txt" not in wb.state.known
        opening = loop.create_task(opened(server, wb.ws.to_uri("new.txt"), "opened\n"))
        assert await asyncio.to_thread(entered.wait, 10), "the opened file was never read"
        ticks = 0
        for _ in range(5):  # the loop runs on while the read is held
            await asyncio.sleep(0)
            ticks += 1
        assert not opening.done() and ticks == 5
        gate.set()
        await opening
        assert readers and all(t is not loop_thread for t in readers)
        assert wb.state.known.get("new.txt") == wb.store.objects.hasher.digest(b"opened\n")
    finally:
        gate.set()
        server.closed = True
        wb.close()

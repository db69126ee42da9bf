"""The command line's reader of the owner's replies: a big reply that arrives slowly, while the caller
polls in short socket timeouts, is read whole. It failed with `[unreachable] ... header too long` on a
rewind of 10,000 files through a live owner (bench real-history-bad-input): a timeout in the middle
of the body dropped the header, and the next read took body bytes for a header."""

from __future__ import annotations

import json
import socket
import threading

import pytest

from turnback.remote.wire import Reader, framed


def test_a_timeout_in_the_middle_of_a_big_body_loses_nothing():
    ours, owner = socket.socketpair()
    try:
        ours.settimeout(0.05)
        reader = Reader(ours)
        body = json.dumps({"files": ["x" * 40] * 20_000}).encode()  # about 900 KB
        message = framed(body) + framed(b'{"next":1}')
        paused = threading.Event()

        def send():  # the header and part of the body, then a pause, then the rest
            owner.sendall(message[:300_000])
            paused.wait(10)
            owner.sendall(message[300_000:])
        sender = threading.Thread(target=send)
        sender.start()
        with pytest.raises(TimeoutError):
            reader.body()
        paused.set()
        assert reader.body() == body
        sender.join()
        assert reader.body() == b'{"next":1}'
    finally:
        ours.close()
        owner.close()

"""Answers encoded in slices (lsp/encoding.py): the same text as `json.dumps`, the loop given back
between pieces, and what the plain encoder cannot write left to the old path."""

import asyncio
import json

from hypothesis import given, settings, strategies as st

from turnback.lsp import encoding
from turnback.lsp.encoding import Encoded, encoded, response_text

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=40)


@settings(max_examples=200, deadline=None)
@given(JSON, st.booleans())
def test_the_text_is_json_dumps_byte_for_byte(value, ascii_only):
    text = asyncio.run(encoded(value, ensure_ascii=ascii_only))
    assert isinstance(text, Encoded)
    assert text == json.dumps(value, ensure_ascii=ascii_only)


def test_a_response_is_what_json_dumps_writes():
    result = {"turn": 3, "files": ["a", "é"]}
    text = asyncio.run(encoded(result))
    assert response_text(7, text) == json.dumps({"jsonrpc": "2.0", "id": 7, "result": result})


def test_what_it_cannot_write_is_left_as_it_is():
    for value in ({1: "a"}, {"a": object()}):
        assert asyncio.run(encoded(value)) is value


def test_a_big_answer_gives_the_loop_back(monkeypatch):
    monkeypatch.setattr(encoding, "SLICE_SECONDS", 0.0)  # every piece is a slice
    ticks = []

    async def main():
        async def ticker():
            while True:
                ticks.append(1)
                await asyncio.sleep(0)
        t = asyncio.ensure_future(ticker())
        await asyncio.sleep(0)
        before = len(ticks)
        big = {"groups": [{"headSeq": i, "files": [f"f{j}" for j in range(5)]} for i in range(50)]}
        text = await encoded(big)
        t.cancel()
        return len(ticks) - before, text, big

    ran, text, big = asyncio.run(main())
    assert text == json.dumps(big)
    assert ran >= 40  # the loop ran between the pieces (each group is one)

"""Which objects a state reaches, and packed digest lists: apart from the codec that uses them."""

from __future__ import annotations

from ..errors import CorruptStore
from ..model.images import ABSENT, FOLDER, UNKNOWN, is_digest
from ..model.session import SessionState
from ..model.turns import Turn


def pack_sorted(digests) -> bytes:
    """Digests as sorted raw 16-byte values: deterministic, and half the size of hex text."""
    return b"".join(bytes.fromhex(d) for d in sorted(digests))


def pack_ordered(digests) -> bytes:
    return b"".join(bytes.fromhex(d) for d in digests)


def digest_list(value, where: str) -> list[str]:
    """A root's ordered digest list: packed bytes, or a list of hex digests (older roots)."""
    if isinstance(value, list):
        if not all(is_digest(d) for d in value):
            raise CorruptStore(f"object {where}: a digest list holds something else")
        return list(value)
    return unpack_digests(value, where)


def unpack_digests(packed, where: str) -> list[str]:
    if isinstance(packed, list):
        return list(packed)
    if not isinstance(packed, (bytes, bytearray)) or len(packed) % 16:
        raise CorruptStore(f"object {where}: a reference list is not whole digests")
    return [packed[i:i + 16].hex() for i in range(0, len(packed), 16)]


def turn_images(turn: Turn):
    for entry in turn.files.values():
        for image in (entry.before, entry.after):
            if is_digest(image):
                yield image
    for step in turn.steps:
        if step.result:
            yield step.result
    for digest in turn.instructions.values():
        yield digest



NOT_DIGESTS = (ABSENT, UNKNOWN, FOLDER, None, "")  # what `is_digest` says no to


def state_refs(state: SessionState) -> set[str]:
    """Image and result objects a state references (without writing it): used for journal pins.
    Everything is gathered and the markers taken out at the end (a test per image cost 25 ms a
    look at 20,000 files, on the loop: the collector looks again after every change)."""
    refs: set[str] = set()
    add = refs.add
    for turn in state.turns:
        for entry in turn.files.values():
            add(entry.before)
            add(entry.after)
        refs.update(step.result for step in turn.steps if step.result)
        refs.update(turn.instructions.values())
    refs.update(state.known.values())
    for changes in state.between.values():
        for pair in changes.values():
            refs.update(pair)
    refs.difference_update(NOT_DIGESTS)
    return refs

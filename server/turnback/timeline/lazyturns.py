"""Turns read on demand: a command-line store open that reads only the turns it touches.

A command (`turn begin`, `turn settle`, `info`) opened the store by reading and decoding every turn
object of the session, so its cost grew with the history (docs/performance.md, "The store's open").
`LazyTurn` stands in the state's list for a published turn not read yet: the first access to any
of its fields reads its object (verified, as before) and turns it into a plain `Turn`, so a reader
never sees the difference. A publication names an untouched turn by the digest it was read from,
and its reference list by the published `turnLists` groups (`TurnListGroups`), without reading it:
a turn nobody touched has not changed. A published turn is immutable and reachable from the head it
was read from, so reading it later gives what reading it at the open gave.
"""

from __future__ import annotations

from dataclasses import fields

from ..errors import CorruptStore
from ..model.turns import Turn
from .staterefs import pack_ordered, unpack_digests

GROUP = 64  # turns per `turnLists` group object: a publication rewrites the last group only

_FIELDS = tuple(f.name for f in fields(Turn))


class TurnListGroups:
    """The reference-list digest of each published turn, read a group object at a time."""

    def __init__(self, codec, groups: list[str], count: int):
        self.codec = codec
        self.groups = groups
        self.count = count
        self._read: dict[int, list[str]] = {}

    def list_of(self, i: int) -> str | None:
        """Turn `i`'s (0-based) reference list; None when the root has no groups for it."""
        g = i // GROUP
        if not 0 <= i < self.count or len(self.groups) != -(-self.count // GROUP):
            return None
        lists = self._read.get(g)
        if lists is None:
            digest = self.groups[g]
            lists = unpack_digests(self.codec.get_doc(digest, "turnlists")["lists"], digest)
            if len(lists) != min(GROUP, self.count - g * GROUP):
                raise CorruptStore(f"object {digest}: a turn-list group of the wrong length")
            self._read[g] = lists
        return lists[i % GROUP]


def group_payloads(lists: list[str]) -> list[dict]:
    """The `turnLists` group objects' payloads for the turns' reference lists, in order."""
    return [{"lists": pack_ordered(lists[i:i + GROUP])} for i in range(0, len(lists), GROUP)]


class _Field:
    """A field of a turn not read yet: reading or setting it reads the turn first."""

    def __init__(self, name: str):
        self.name = name

    def __get__(self, turn, owner=None):
        if turn is None:
            return self
        turn.load()
        return getattr(turn, self.name)

    def __set__(self, turn, value) -> None:
        turn.load()
        setattr(turn, self.name, value)


class LazyTurn(Turn):
    """A published turn, read on first use (then a plain `Turn`: its class is changed in place)."""

    def __init__(self, codec, session_id: str, digest: str, index: int, lists: TurnListGroups,
                 finished: bool = False):
        d = self.__dict__  # the fields are descriptors here: the instance holds only the source
        d["_source"] = (codec, session_id, digest, index, lists)
        d["finished_unread"] = finished  # the head's record counts it among the finished turns

    @property
    def unread(self) -> tuple[str, str | None]:
        """(the turn's digest, its reference list's digest or None): how a publication names it."""
        _codec, _sid, digest, index, lists = self.__dict__["_source"]
        return digest, lists.list_of(index)

    def load(self) -> None:
        codec, session_id, digest, _index, _lists = self.__dict__["_source"]
        turn = codec.read_turn(session_id, digest)  # a damaged object raises, and stays unread
        del self.__dict__["_source"]
        del self.__dict__["finished_unread"]  # read: its own state says, and may change
        self.__dict__.update(turn.__dict__)
        self.__class__ = Turn  # type: ignore[assignment]  # a plain turn from now on

    def __eq__(self, other):
        self.load()
        return self == other

    __hash__ = None  # type: ignore[assignment]  # as a dataclass with eq

    def __reduce_ex__(self, protocol):
        self.load()  # a copy (`model.session.clone`) is of a plain turn
        return self.__reduce_ex__(protocol)

    def __repr__(self) -> str:
        self.load()
        return repr(self)


for _name in _FIELDS:
    setattr(LazyTurn, _name, _Field(_name))


def is_unread(turn: Turn) -> bool:
    return type(turn) is LazyTurn

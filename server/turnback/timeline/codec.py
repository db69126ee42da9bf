"""The session state as content-addressed objects.

A publication writes a body object `{root, refs}`: `root` names the session object and `refs` lists
every object the state reaches, so the collector marks a head by reading its body alone. Turns are
one object each and the known-image map is split into shards, so a settled turn or an unchanged shard
has the same digest in every later publication and costs nothing to publish again.
"""

from __future__ import annotations

from concurrent.futures import TimeoutError as FutureTimeout

import cbor2

from ..errors import CorruptStore, NewerFormat
from ..model.directives import Directive
from ..model.gaps import Gap
from ..model.images import is_digest, is_folder_key
from ..model.known import SHARDS, KnownMap
from ..model.session import AgentTranscript, SessionState
from ..model.turns import Turn
from ..store import waiting
from .lazyturns import LazyTurn, TurnListGroups, group_payloads, is_unread
from .parsed import ParsedCache
from .staterefs import digest_list, pack_ordered, pack_sorted, turn_images, unpack_digests

OBJECT_FORMAT = 2  # the newest object format this version reads
# Objects that hold folder keys (model/images.py: `src/empty/` -> "folder") say format 2, so a
# turnback that knows no folders refuses them (NewerFormat) instead of taking a folder for a file;
# every other object is written as format 1, byte for byte as before (docs/storage-format.md §3b).
FOLDERS_FORMAT = 2


def dumps(kind: str, payload: dict, version: int = 1) -> bytes:
    return cbor2.dumps({"t": kind, "v": version, "p": payload}, canonical=True)


def _version(paths) -> int:
    return FOLDERS_FORMAT if any(is_folder_key(rel) for rel in paths) else 1


def loads(data: bytes, kind: str, where: str) -> dict:
    try:
        doc = cbor2.loads(data)
    except Exception as exc:  # cbor2 raises several types for damaged input
        raise CorruptStore(f"{where}: not a readable CBOR object ({exc})") from exc
    if not isinstance(doc, dict) or doc.get("t") != kind:
        raise CorruptStore(f"{where}: expected a {kind} object")
    if doc.get("v", 0) > OBJECT_FORMAT:
        raise NewerFormat(f"{where}: written by a newer turnback (object format {doc['v']})")
    return doc["p"]




class StateCodec:
    """Writes and reads states; remembers which objects it already confirmed in this process."""

    def __init__(self, objects):
        self.objects = objects
        # digest -> (raw size, stored size): present and unchanged while its file keeps that stored
        # size (one lstat, where the raw size of an envelope would cost an open and a read).
        self._confirmed: dict[str, tuple[int, int]] = {}
        self._shard_cache: dict[int, tuple] = {}  # shard -> ((map id, shard, generation), digest, list)
        self._chunks: dict[tuple, tuple] = {}  # (session, turn, started) -> (end, prefix, chunks)
        self._lists_by_key: dict[str, str] = {}  # turn or shard digest -> its reference list
        self.parsed = ParsedCache()  # decoded outlines, shards and turns by digest (parsed.py)
        self.lazy_turns = False  # the Book's published state: turns read when first used

    def forget(self, digests) -> None:
        """The collector removed these objects: they must be written again if needed."""
        digests = list(digests)
        for d in digests:
            self._confirmed.pop(d, None)
        # a digest whose bytes are gone is never answered from memory
        self.parsed.forget([*digests, *("outline:" + d for d in digests),
                            *("root:" + d for d in digests)])

    def _put(self, data: bytes) -> str:
        digest = self.objects.hasher.digest(data)
        seen = self._confirmed.get(digest)
        if seen is not None and seen[0] == len(data) and self._stored(digest) == seen[1]:
            return digest
        digest = self.objects.put(data)
        stored = self._stored(digest)
        if stored >= 0:  # a small object a batch holds in memory has no size yet: not confirmed,
            self._confirmed[digest] = (len(data), stored)  # or a discarded batch would pass as present
        return digest

    # -- write ----------------------------------------------------------------------------------
    def write(self, state: SessionState) -> str:
        """Write every object of the state (the caller batches durability) and return the body digest."""
        job = self.iter_write(state)
        while True:
            try:
                next(job)
            except StopIteration as done:
                return done.value

    def iter_write(self, state: SessionState):
        """`write` as a job's steps (its value is the body digest): it yields after each turn and
        each shard it encodes, so the first publication after a big sweep (every shard changed,
        45 ms at 20,000 files) never holds an event loop. The state must not change meanwhile: a
        job runs under the server's mutation lock."""
        refs: set[str] = set()

        def put(kind: str, payload: dict, version: int = 1) -> str:
            digest = self._put(dumps(kind, payload, version))
            refs.add(digest)
            return digest

        turn_digests, lists = [], []
        for turn in state.turns:
            named = turn.unread if is_unread(turn) else None  # type: ignore[attr-defined]
            if named is not None and named[1] is not None:  # untouched since it was read: the same
                turn_digests.append(named[0])
                lists.append(named[1])
                continue
            doc = turn.to_dict()
            turn_refs: set[str] = set(turn_images(turn))
            doc["responseChunks"] = self._response_chunks(state.session_id, turn, turn_refs)
            del doc["response"]
            digest = self._put(dumps("turn", doc, _version(turn.files)))
            turn_digests.append(digest)
            turn_refs.add(digest)
            lists.append(self._ref_list(digest, turn_refs))  # the turn object names all it reaches
            yield None
        turn_lists = [put("turnlists", g) for g in group_payloads(lists)]
        known_digests = yield from self._known_shards(state.known, lists)
        between = {}
        for k, changes in state.between.items():
            between[k] = {rel: list(pair) for rel, pair in changes.items()}
            refs.update(i for pair in changes.values() for i in pair if is_digest(i))
        between_modes = {k: dict(v) for k, v in state.between_modes.items() if v}
        root = {
            "sessionId": state.session_id, "created": state.created, "config": state.config,
            # Packed 16-byte digests in order (a hex list in stores written before format 2): the
            # root is rewritten by every publication, so its size is paid 2,850 times a long session.
            "turns": pack_ordered(turn_digests), "between": between,
            "turnLists": pack_ordered(turn_lists),  # each turn's reference list, by groups
            **({"betweenModes": between_modes} if between_modes else {}),
            "betweenBy": [[k, rel, by] for (k, rel), by in state.between_by.items()],
            "known": pack_ordered(known_digests),  # position is the shard number
            "directives": put("directives", {"items": [d.to_dict() for d in state.directives.values()]}),
            "workflow": put("workflow", {k: list(v) for k, v in state.workflow.items()}),
            "agents": put("agents", {"items": [a.to_dict() for a in state.agents.values()]}),
            "liveGaps": [g.to_dict() for g in state.live_gaps.values()],
            "epoch": state.epoch, "forkPoint": state.fork_point, "lastOp": state.last_op,
            "frozen": state.frozen,
        }
        if state.lineage:
            root["lineage"] = state.lineage
        if state.restores:
            root["restores"] = state.restores
        root_digest = put("session", root, _version(rel for v in state.between.values() for rel in v))
        # The body names the small things directly and every turn's and shard's reference list by
        # the list object's digest: those lists are shared by every publication whose turn or shard
        # is unchanged, so a publication writes O(change) bytes, not O(state).
        return self._put(dumps("body", {"root": root_digest, "refs": pack_sorted(refs),
                                        "lists": pack_sorted(set(lists))}))

    def _ref_list(self, key: str, refs: set[str]) -> str:
        """The digest of the reference-list object for a turn or shard object `key` (cached: the list
        is a function of the object it starts from, which is content-addressed)."""
        cached = self._lists_by_key.get(key)
        if cached is not None and self._present(cached):
            return cached
        digest = self._put(dumps("refs", {"refs": pack_sorted(refs)}))
        self._lists_by_key[key] = digest
        return digest

    def _known_shards(self, known: KnownMap, lists: list[str]):
        """One object per shard, each with its reference list; a shard whose generation has not moved
        reuses its digest and list. A generator (a step per shard encoded); its value is the list."""
        if not isinstance(known, KnownMap):
            known = KnownMap(known)
        out = []
        for i in range(SHARDS):
            key = (known.map_id, i, known.generations[i])
            cached = self._shard_cache.get(i)
            if cached is not None and cached[0] == key and self._present(cached[1]) \
                    and self._present(cached[2]):
                digest, ref_list = cached[1], cached[2]
            else:
                shard, modes = known.shard(i), known.shard_modes(i)
                # modes only when some are known: a shard without any encodes as it always did
                digest = self._put(dumps("known", {"map": shard, "modes": modes} if modes
                                         else {"map": shard}, _version(shard)))
                shard_refs = {im for im in shard.values() if is_digest(im)} | {digest}
                ref_list = self._ref_list(digest, shard_refs)
                self._shard_cache[i] = (key, digest, ref_list)
                yield None
            out.append(digest)
            lists.append(ref_list)
        return out

    def _response_chunks(self, session_id: str, turn: Turn, refs: set[str]) -> list[str]:
        """A turn's response as append-only text chunks: a publication inside a long turn writes only
        the text added since the previous one, so N publications of a growing response cost O(total)
        bytes rather than O(N x total)."""
        key = (session_id, turn.n, turn.started)
        text = turn.response.encode("utf-8")
        end, prefix, chunks = self._chunks.get(key, (0, None, []))
        if end > len(text) or (end and self.objects.hasher.digest(text[:end]) != prefix) \
                or not self._chunks_hold(chunks, text[:end]):
            end, chunks = 0, []  # the text was replaced, not extended (or a chunk is gone): start over
        if len(text) > end or not chunks:
            chunks = chunks + [self._put(text[end:])]
            end = len(text)
            self._chunks[key] = (end, self.objects.hasher.digest(text), chunks)
        refs.update(chunks)
        return list(chunks)

    def _chunks_hold(self, chunks: list[str], text: bytes) -> bool:
        """The cached chunks still spell `text`. A repack moves them into a pack (their stored size
        changes, their bytes do not): read them again rather than write the text as one new chunk,
        which would give the unchanged turn a new digest (Redo compares turns by digest)."""
        if all(self._present(c) for c in chunks):
            return True
        try:
            if b"".join(self.objects.get(c) for c in chunks) != text:
                return False
        except (FileNotFoundError, CorruptStore):  # collected or damaged: the text is written again
            return False
        for c in chunks:
            self._confirm(c)
        return True

    def read_turn(self, session_id: str, digest: str) -> Turn:
        cached = self.parsed.get(digest)
        if cached is None:
            doc = self._get(digest, "turn")
            chunks = doc.pop("responseChunks", None)
            text = None
            if chunks is not None:
                parts = [self.objects.get(c) for c in chunks]
                text = b"".join(parts)
                for c, part in zip(chunks, parts):
                    self._confirm(c, len(part))
            self.parsed.put(digest, (doc, chunks, text), _turn_weight(doc, text))
        else:
            doc, chunks, text = cached
        if chunks is not None:
            doc = {**doc, "response": text.decode("utf-8")}
        turn = Turn.from_dict(doc)
        if chunks is not None:
            self._chunks[(session_id, turn.n, turn.started)] = (
                len(text), self.objects.hasher.digest(text), list(chunks))
        return turn

    def _present(self, digest: str) -> bool:
        # -1: it had no file yet (put in a batch, durable only when the batch commits, gone if the
        # batch failed): never counted as present, or a failed publication's objects were skipped
        # by the next one, which then named objects that do not exist
        seen = self._confirmed.get(digest)
        return seen is not None and seen[1] >= 0 and self._stored(digest) == seen[1]

    def _stored(self, digest: str) -> int:
        stored = getattr(self.objects, "stored_size", None)  # an object store without envelopes
        size = stored(digest) if stored is not None else self.objects.stat(digest)
        return -1 if size is None else size

    def _confirm(self, digest: str, raw: int | None = None) -> None:
        """Remember an object just read whole (and so verified); `raw`, its length when the caller
        holds its bytes (asking the store would open the file again: an open per turn at every
        store open)."""
        if raw is None:
            raw = self.objects.stat(digest) or 0
        self._confirmed[digest] = (raw, self._stored(digest))

    # -- read -----------------------------------------------------------------------------------
    def read_body(self, body_digest: str, *, skip=()) -> dict:
        """`{root, refs}` with refs as hex digests: the body's own, plus each reference list it names
        and that list's contents. A list in `skip` (a marker's set of objects already marked, whose
        contents were marked with it) is named but not read again."""
        body = loads(self.objects.get(body_digest), "body", f"object {body_digest}")
        refs = unpack_digests(body.get("refs", b""), body_digest)
        for ref_list in unpack_digests(body.pop("lists", b""), body_digest):
            refs.append(ref_list)
            if ref_list not in skip:
                refs.extend(self.list_contents(ref_list))
        body["refs"] = refs
        return body

    def list_contents(self, digest: str) -> list[str]:
        doc = loads(self.objects.get(digest), "refs", f"object {digest}")
        return unpack_digests(doc["refs"], digest)

    def read(self, body_digest: str, *, lazy: bool = False, finished: int = 0) -> SessionState:
        """The published state. Only the root is needed: the reference lists (every digest the
        state reaches, 250,000 of them in a big workspace) are not read here. `lazy`: each turn is
        read when first used (`lazyturns.py`; a short-lived command's open), not all of them now;
        `finished`, how many leading turns the record naming the body says are not running."""
        body = self.read_body(body_digest, skip=_EVERY_LIST)
        root = self._get(body["root"], "session")
        state = SessionState(session_id=root["sessionId"], created=root["created"],
                             config=dict(root.get("config", {})))
        turn_digests = digest_list(root["turns"], body_digest)
        if lazy:
            groups = TurnListGroups(self, digest_list(root.get("turnLists", b""), body_digest),
                                    len(turn_digests))
            state.turns = [LazyTurn(self, state.session_id, d, i, groups, i < finished)
                           for i, d in enumerate(turn_digests)]
        else:
            state.turns = [self.read_turn(state.session_id, d) for d in turn_digests]
        state.between = {int(k): {rel: tuple(pair) for rel, pair in v.items()}
                         for k, v in root.get("between", {}).items()}
        state.between_modes = {int(k): dict(v) for k, v in root.get("betweenModes", {}).items()}
        state.between_by = {(int(k), rel): by for k, rel, by in root.get("betweenBy", [])}
        state.known = known = KnownMap()  # shard by shard: no second copy of 250,000 paths
        for shard in digest_list(root["known"], body_digest):
            images, modes = self.known_doc(shard)
            known.update(images)
            for rel, mode in modes.items():  # format 1 stores carry none: unknown
                known.set_mode(rel, mode)
        state.directives = {d["id"]: Directive.from_dict(d)
                            for d in self._get(root["directives"], "directives")["items"]}
        state.workflow = {k: list(v) for k, v in self._get(root["workflow"], "workflow").items()}
        state.agents = {a["agentId"]: AgentTranscript.from_dict(a)
                        for a in self._get(root["agents"], "agents")["items"]}
        state.live_gaps = {(g["rel"], g["reason"]): Gap.from_dict(g) for g in root.get("liveGaps", [])}
        state.epoch = root.get("epoch", 0)
        state.fork_point = root.get("forkPoint", "")
        state.last_op = root.get("lastOp", 0)
        state.frozen = root.get("frozen", False)
        state.lineage = dict(root.get("lineage") or {})
        state.restores = [dict(r) for r in root.get("restores") or []]
        return state

    def read_job(self, body_digest: str):
        """`read` as a job: the objects are read and decoded on a helper thread (a whole state:
        every turn and shard, some of them in packed blocks to inflate) while the job yields, so a
        server's loop never holds it. Read only: a job closed meanwhile lets the read finish on
        its own and drops it."""
        fut = waiting.in_thread(self.read, body_digest)
        while True:
            try:
                return fut.result(timeout=waiting.WAIT_SLICE)
            except FutureTimeout:
                yield None

    def outline(self, body_digest: str) -> tuple[list[str], list[str]]:
        """(turn digests, known-shard digests) of a published state: enough to tell whether one
        state's turns are a prefix of another's and which paths differ, without reading turns.
        Only the body and the root are read (never the reference lists), once per body."""
        key = "outline:" + body_digest
        cached = self.parsed.get(key)
        if cached is None:
            root = self._get(self._root_of(body_digest), "session")
            cached = (digest_list(root["turns"], body_digest),
                      digest_list(root["known"], body_digest))
            self.parsed.put(key, cached, 1 + (len(cached[0]) + len(cached[1])) // 64)
        return list(cached[0]), list(cached[1])

    def iter_warm(self, digest: str):
        """A job's steps before it reads `digest` on its loop: nothing when it is decoded already,
        else the pack blocks the read would inflate are inflated on a helper thread meanwhile."""
        warm = getattr(self.objects, "iter_warm", None)
        if warm is not None and self.parsed.get(digest) is None:
            yield from warm(digest)

    def iter_warm_outline(self, body_digest: str):
        """`iter_warm` for what `outline` reads: the body, then the root it names."""
        if self.parsed.get("outline:" + body_digest) is not None:
            return
        yield from self.iter_warm(body_digest)
        root = self._root_of(body_digest)
        if is_digest(root):
            yield from self.iter_warm(root)

    def _root_of(self, body_digest: str) -> str:
        """The session object a body names, read once per body."""
        key = "root:" + body_digest
        root = self.parsed.get(key)
        if root is None:
            root = self.read_body(body_digest, skip=_EVERY_LIST)["root"]
            self.parsed.put(key, root, 1)
        return root

    def known_doc(self, digest: str) -> tuple[dict, dict]:
        """(images, permission bits) of one known shard, decoded once per digest: shared, never to
        be changed by the caller (`known_shard` and `known_shard_modes` give copies)."""
        cached = self.parsed.get(digest)
        if cached is None:
            doc = self._get(digest, "known")
            cached = (doc["map"], doc.get("modes") or {})
            self.parsed.put(digest, cached, len(cached[0]))
        return cached

    def known_shard(self, digest: str) -> dict:
        return dict(self.known_doc(digest)[0])

    def known_shard_modes(self, digest: str) -> dict:
        """The permission bits a known shard records (format 2; empty when it records none)."""
        return dict(self.known_doc(digest)[1])

    def get_doc(self, digest: str, kind: str) -> dict:
        return self._get(digest, kind)

    def _get(self, digest: str, kind: str) -> dict:
        data = self.objects.get(digest)
        payload = loads(data, kind, f"object {digest}")
        self._confirm(digest, len(data))
        return payload


class _EveryList:
    """`skip` for `read_body`: no reference list is read (a reader that needs only the root)."""

    def __contains__(self, _digest) -> bool:
        return True


_EVERY_LIST = _EveryList()


def _turn_weight(doc: dict, text: bytes | None) -> int:
    return 1 + len(doc.get("files", ())) + len(doc.get("steps", ())) + len(text or b"") // 256

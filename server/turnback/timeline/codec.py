"""The session state as content-addressed objects.

A publication writes a body object `{root, refs}`: `root` names the session object and `refs` lists
every object the state reaches, so the collector marks a head by reading its body alone. Turns are
one object each and the known-image map is split into shards, so a settled turn or an unchanged shard
has the same digest in every later publication and costs nothing to publish again.
"""

from __future__ import annotations

import cbor2

from ..errors import CorruptStore, NewerFormat
from ..model.directives import Directive
from ..model.gaps import Gap
from ..model.images import is_digest
from ..model.known import SHARDS, KnownMap, shard_of
from ..model.session import AgentTranscript, SessionState
from ..model.turns import Turn

OBJECT_FORMAT = 1


def dumps(kind: str, payload: dict) -> bytes:
    return cbor2.dumps({"t": kind, "v": OBJECT_FORMAT, "p": payload}, canonical=True)


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
        self._confirmed: dict[str, int] = {}
        self._shard_cache: dict[int, tuple] = {}
        self._chunks: dict[tuple, tuple] = {}  # (session, turn, started) -> (end, prefix digest, chunks)  # shard -> ((map id, shard, generation), digest, refs)

    def forget(self, digests) -> None:
        """The collector removed these objects: they must be written again if needed."""
        for d in digests:
            self._confirmed.pop(d, None)

    def _put(self, data: bytes) -> str:
        digest = self.objects.hasher.digest(data)
        if self._confirmed.get(digest) == len(data) and self.objects.stat(digest) == len(data):
            return digest
        digest = self.objects.put(data)
        self._confirmed[digest] = len(data)
        return digest

    # -- write ----------------------------------------------------------------------------------
    def write(self, state: SessionState) -> str:
        """Write every object of the state (the caller batches durability) and return the body digest."""
        refs: set[str] = set()

        def put(kind: str, payload: dict) -> str:
            digest = self._put(dumps(kind, payload))
            refs.add(digest)
            return digest

        turn_digests = []
        for turn in state.turns:
            doc = turn.to_dict()
            doc["responseChunks"] = self._response_chunks(state.session_id, turn, refs)
            del doc["response"]
            turn_digests.append(put("turn", doc))
            refs.update(_turn_images(turn))
        known_digests = self._known_shards(state.known, refs)
        between = {}
        for k, changes in state.between.items():
            between[k] = {rel: list(pair) for rel, pair in changes.items()}
            refs.update(i for pair in changes.values() for i in pair if is_digest(i))
        root = {
            "sessionId": state.session_id, "created": state.created, "config": state.config,
            "turns": turn_digests, "between": between,
            "known": known_digests,  # position is the shard number
            "directives": put("directives", {"items": [d.to_dict() for d in state.directives.values()]}),
            "workflow": put("workflow", {k: list(v) for k, v in state.workflow.items()}),
            "agents": put("agents", {"items": [a.to_dict() for a in state.agents.values()]}),
            "liveGaps": [g.to_dict() for g in state.live_gaps.values()],
            "epoch": state.epoch, "forkPoint": state.fork_point, "lastOp": state.last_op,
            "frozen": state.frozen,
        }
        root_digest = put("session", root)
        # refs packed as raw 16-byte digests, sorted: half the size of a list of hex strings, and a
        # body is the one object every publication writes anew.
        packed = b"".join(bytes.fromhex(d) for d in sorted(refs))
        return self._put(dumps("body", {"root": root_digest, "refs": packed}))

    def _known_shards(self, known: KnownMap, refs: set[str]) -> list[str]:
        """One object per shard; a shard whose generation has not moved reuses its digest and refs."""
        if not isinstance(known, KnownMap):
            known = KnownMap(known)
        shards: list[dict] | None = None
        out = []
        for i in range(SHARDS):
            key = (known.map_id, i, known.generations[i])
            cached = self._shard_cache.get(i)
            if cached is not None and cached[0] == key and self._present(cached[1]):
                digest, shard_refs = cached[1], cached[2]
            else:
                if shards is None:
                    shards = [{} for _ in range(SHARDS)]
                    for rel, image in known.items():
                        shards[shard_of(rel)][rel] = image
                digest = self._put(dumps("known", {"map": shards[i]}))
                shard_refs = frozenset(im for im in shards[i].values() if is_digest(im))
                self._shard_cache[i] = (key, digest, shard_refs)
            out.append(digest)
            refs.add(digest)
            refs.update(shard_refs)
        return out

    def _response_chunks(self, session_id: str, turn: Turn, refs: set[str]) -> list[str]:
        """A turn's response as append-only text chunks: a publication inside a long turn writes only
        the text added since the previous one, so N publications of a growing response cost O(total)
        bytes rather than O(N x total)."""
        key = (session_id, turn.n, turn.started)
        text = turn.response.encode("utf-8")
        end, prefix, chunks = self._chunks.get(key, (0, None, []))
        if end > len(text) or (end and self.objects.hasher.digest(text[:end]) != prefix) \
                or not all(self._present(c) for c in chunks):
            end, chunks = 0, []  # the text was replaced, not extended: start over
        if len(text) > end or not chunks:
            chunks = chunks + [self._put(text[end:])]
            end = len(text)
            self._chunks[key] = (end, self.objects.hasher.digest(text), chunks)
        refs.update(chunks)
        return list(chunks)

    def _read_turn(self, session_id: str, digest: str) -> Turn:
        doc = self._get(digest, "turn")
        chunks = doc.pop("responseChunks", None)
        if chunks is not None:
            text = b"".join(self.objects.get(c) for c in chunks)
            doc["response"] = text.decode("utf-8")
            for c in chunks:
                self._confirmed[c] = self.objects.stat(c) or 0
        turn = Turn.from_dict(doc)
        if chunks is not None:
            self._chunks[(session_id, turn.n, turn.started)] = (
                len(text), self.objects.hasher.digest(text), list(chunks))
        return turn

    def _present(self, digest: str) -> bool:
        size = self._confirmed.get(digest)
        return size is not None and self.objects.stat(digest) == size

    # -- read -----------------------------------------------------------------------------------
    def read_body(self, body_digest: str) -> dict:
        """`{root, refs}` with refs as hex digests, whatever their packing on disk."""
        body = loads(self.objects.get(body_digest), "body", f"object {body_digest}")
        packed = body.get("refs")
        if isinstance(packed, (bytes, bytearray)):
            if len(packed) % 16:
                raise CorruptStore(f"object {body_digest}: a body's refs are not whole digests")
            body["refs"] = [packed[i:i + 16].hex() for i in range(0, len(packed), 16)]
        return body

    def read(self, body_digest: str) -> SessionState:
        body = self.read_body(body_digest)
        root = self._get(body["root"], "session")
        state = SessionState(session_id=root["sessionId"], created=root["created"],
                             config=dict(root.get("config", {})))
        state.turns = [self._read_turn(state.session_id, d) for d in root["turns"]]
        state.between = {int(k): {rel: tuple(pair) for rel, pair in v.items()}
                         for k, v in root.get("between", {}).items()}
        known = {}
        for shard in root["known"]:
            known.update(self._get(shard, "known")["map"])
        state.known = KnownMap(known)
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
        return state

    def _get(self, digest: str, kind: str) -> dict:
        payload = loads(self.objects.get(digest), kind, f"object {digest}")
        self._confirmed[digest] = self.objects.stat(digest) or 0
        return payload


def _turn_images(turn: Turn):
    for entry in turn.files.values():
        for image in (entry.before, entry.after):
            if is_digest(image):
                yield image
    for step in turn.steps:
        if step.result:
            yield step.result
    for digest in turn.instructions.values():
        yield digest


def state_refs(state: SessionState) -> set[str]:
    """Image and result objects a state references (without writing it): used for journal pins."""
    refs: set[str] = set()
    for turn in state.turns:
        refs.update(_turn_images(turn))
    refs.update(i for i in state.known.values() if is_digest(i))
    for changes in state.between.values():
        refs.update(i for pair in changes.values() for i in pair if is_digest(i))
    return refs

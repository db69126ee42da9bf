"""`turnback/diff` and `turnback/image/read`: what a turn (or every turn from K on) changed, in words
and unified diffs, and the bytes of one image for an editor's own diff view. Reads only.

Both name images by what they are to a person ("before turn 3", "your edit after turn 3 (saved in
the editor)"); digests travel only as the handles a client passes back to `turnback/image/read`.
"""

from __future__ import annotations

from ..diffs import text as T
from ..diffs.changes import Change, changes_since, turn_changes
from ..errors import InvalidParams, NotFound, UnknownTurn
from ..model.images import ABSENT, UNKNOWN
from ..store.objects.digest import is_digest
from . import params as P

# An image larger than this is not sent inline by `turnback/image/read` (a client says so instead).
MAX_IMAGE_BYTES = 8 * 1024 * 1024


class DiffFeature:
    def __init__(self, wb):
        self.wb = wb

    # -- turnback/diff -----------------------------------------------------------------------------
    def diff(self, params) -> dict:
        return self.wb.run(self.diff_job(params))

    def diff_job(self, params):
        """A job: it yields after each file it diffs, so a long range never holds a server's loop."""
        p = P.obj(params)
        turn = P.field(p, "turn", int, default=None, allow_none=True)
        since = P.field(p, "since", int, default=None, allow_none=True)
        context = P.field(p, "context", int, default=3)
        with_text = P.field(p, "text", bool, default=True)
        if (turn is None) == (since is None):
            raise InvalidParams("give exactly one of turn (one turn's changes) and since (every "
                                "change from that turn on)", data={"field": "turn"})
        state = yield from self._state_job(p)
        n = turn if turn is not None else since
        if state.turn(n) is None:
            raise UnknownTurn(f"there is no turn {n}; the session has {state.turn_count}",
                              data={"turn": n})
        under = self._under(p)
        found = (turn_changes(state, n, under=under) if turn is not None
                 else changes_since(state, n, under=under))
        out = []
        objects = self.wb.store.objects
        warm = getattr(objects, "iter_warm", None)
        for change in found:
            if warm is not None and change.status not in ("gap", "transient", "mode"):
                for image in (change.before, change.after):  # packed blocks: off the loop
                    if is_digest(image):
                        yield from warm(image)
            out.append(self._wire(state, change, with_text, context))
            yield ("diff", len(out))
        result = {"sessionId": state.session_id, "changes": out,
                  "range": {"turn": turn} if turn is not None else
                  {"since": since, "through": state.turn_count}}
        if under:
            result["path"] = under
        return result

    def _state_job(self, p: dict):
        """The live state, or another session's read on a helper thread (a whole state)."""
        sid = P.field(p, "sessionId", str, default=None, allow_none=True)
        if sid is None:
            return self.wb.state
        return (yield from self.wb.sessions.read_job(sid))

    def _under(self, p: dict) -> str | None:
        uri = P.field(p, "uri", str, default=None, allow_none=True)
        if uri is None:
            return None
        return self.wb.ws.to_rel(uri)  # outside the workspace: outside-workspace, said clearly

    def _wire(self, state, c: Change, with_text: bool, context: int) -> dict:
        prompt = state.turn(c.turn).prompt if c.source == "turn" and state.turn(c.turn) else None
        label_before, label_after = c.labels()
        out = {"source": c.source, "path": c.rel, "uri": self.wb.ws.to_uri(c.rel),
               "status": c.status,
               "before": _side(c.before, label_before, c.before_mode),
               "after": _side(c.after, label_after, c.after_mode)}
        if c.source == "turn":
            out.update(turn=c.turn, prompt=prompt)
            if c.checkpoint:
                out["checkpoint"] = c.checkpoint
        else:
            out.update(afterTurn=c.turn, by=c.by)
        if c.gap:
            out["gap"] = c.gap
        if c.status in ("gap", "transient", "mode"):
            return out
        try:
            before = self._bytes(c.before)
            after = self._bytes(c.after)
        except _Missing as exc:
            out["unavailable"] = str(exc)
            return out
        if not (T.is_text(before) and T.is_text(after)):
            out["binary"] = True
            return out
        if max(len(before or b""), len(after or b"")) > T.MAX_DIFF_BYTES:
            out["tooLargeToDiff"] = True  # listed; the client shows both images in its own view
            return out
        out["added"], out["removed"] = T.line_counts(before, after)
        if with_text:
            out["diff"] = T.unified(before, after, c.rel, label_before, label_after,
                                    context=context)
        return out

    def _bytes(self, image) -> bytes | None:
        if image in (ABSENT, None):
            return None
        if image == UNKNOWN:
            return None  # shown as "unknown-before": the after side alone
        try:
            return self.wb.store.objects.get(image)
        except FileNotFoundError:
            raise _Missing("its image is no longer in the store") from None

    # -- turnback/image/read -------------------------------------------------------------------------
    def image(self, params) -> dict:
        return self.wb.run(self.image_job(params))

    def image_job(self, params):
        """The bytes of one image the session references: `{image}` (a handle from `turnback/diff`
        or the session log), or `{turn, uri, side}` for a turn's before or after image. A job: an
        image up to 8 MiB in a packed block is inflated on a helper thread while it yields."""
        p = P.obj(params)
        state = yield from self._state_job(p)
        image = P.field(p, "image", str, default=None, allow_none=True)
        if image is None:
            image = self._turn_image(state, p)
        if image == ABSENT:
            return {"image": ABSENT, "exists": False, "size": 0, "binary": False, "text": ""}
        if image == UNKNOWN:
            return {"image": UNKNOWN, "exists": None, "size": None, "binary": False, "text": None,
                    "unknown": "turnback never saw this file's bytes at that moment"}
        if not is_digest(image):
            raise InvalidParams("image must be an image handle from turnback/diff or the session "
                                "log", data={"field": "image"})
        if not _references(state, image):
            raise NotFound("this session has no such image", data={"image": image})
        objects = self.wb.store.objects
        size = objects.stat(image)
        if size is None:
            raise NotFound("the image is no longer in the store (collected)", data={"image": image})
        if size > MAX_IMAGE_BYTES:
            return {"image": image, "exists": True, "size": size, "binary": None, "text": None,
                    "tooLarge": True}
        warm = getattr(objects, "iter_warm", None)
        if warm is not None:
            yield from warm(image)
        data = objects.get(image)  # verified against its digest: corruption is an error, never shown
        binary = not T.is_text(data)
        return {"image": image, "exists": True, "size": len(data), "binary": binary,
                "text": None if binary else data.decode("utf-8")}

    def _turn_image(self, state, p: dict) -> str:
        n = P.field(p, "turn", int)
        side = P.field(p, "side", str, choices=("before", "after"))
        rel = self.wb.ws.to_rel(P.field(p, "uri", str))
        turn = state.turn(n)
        if turn is None:
            raise UnknownTurn(f"there is no turn {n}", data={"turn": n})
        entry = turn.files.get(rel)
        if entry is None:
            raise NotFound(f"turn {n} did not change {rel}", data={"turn": n, "path": rel})
        return entry.before if side == "before" else entry.after


class _Missing(Exception):
    pass


def _side(image, label: str, mode) -> dict:
    out = {"label": label}
    if image is not None:
        out["image"] = image
        out["exists"] = image != ABSENT if image != UNKNOWN else None
    if mode is not None:
        out["mode"] = mode
    return out


def _references(state, image: str) -> bool:
    """Whether the session state names this image (an image of a file, never another object)."""
    if image in state.known.values():
        return True
    for t in state.turns:
        for e in t.files.values():
            if image in (e.before, e.after):
                return True
    return any(image in pair for bucket in state.between.values() for pair in bucket.values())

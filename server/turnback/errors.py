"""The one error type the core raises. Each carries a stable code that clients may match on."""

from __future__ import annotations


class TurnbackError(Exception):
    """A failure with a stable machine code and a sentence a person understands."""

    code = "internal"

    def __init__(self, message: str, *, code: str | None = None, data: dict | None = None):
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.data = dict(data or {})

    def to_data(self) -> dict:
        return {"code": self.code, **self.data}


class InvalidParams(TurnbackError):
    code = "invalid-params"


class OutsideWorkspace(TurnbackError):
    code = "outside-workspace"


class SymlinkRefused(TurnbackError):
    code = "symlink"


class UnknownTurn(TurnbackError):
    code = "unknown-turn"


class StalePlan(TurnbackError):
    code = "stale-plan"


class NotOwner(TurnbackError):
    code = "not-owner"


class NoHeads(TurnbackError):
    code = "no-heads"


class CorruptStore(TurnbackError):
    code = "corrupt-store"


class NewerFormat(CorruptStore):
    code = "newer-format"


class TurnRunning(TurnbackError):
    code = "turn-running"


class CannotContinue(TurnbackError):
    """A settled turn cannot go on (something changed after it ended, or it is not the last)."""

    code = "cannot-continue"


class NoTurnRunning(TurnbackError):
    code = "no-turn-running"


class SessionFrozen(TurnbackError):
    code = "frozen"  # the contract's name (PROTOCOL.md, Fork)


class NotCurrent(TurnbackError):
    """A request names a session that exists but is not the live one (and is not frozen)."""

    code = "not-current"


class NotFound(TurnbackError):
    code = "not-found"


class UnsavedChanges(TurnbackError):
    """A restore or rewind would write a file the editor holds unsaved changes of (`dirty`)."""

    code = "unsaved-changes"


class UnknownPath(TurnbackError):
    """A path turnback has no image of at the boundary (never seen, or its image there is unknown)."""

    code = "unknown-path"


class NoMatch(TurnbackError):
    """A glob or folder that held no file at the boundary."""

    code = "no-match"


class BadConfig(TurnbackError):
    """turnback.toml (or the store's config.toml) says something turnback cannot use."""

    code = "bad-config"


# --- storage floor (turnback.store) ---


class RecordError(CorruptStore):
    """A record or journal frame failed its checksum, is truncated, or is not valid CBOR."""


class CorruptObject(CorruptStore):
    """An object's bytes do not match its digest."""


class DigestCollision(CorruptStore):
    """Different bytes claim an existing digest; the store refuses to share them."""

    code = "digest-collision"


class HeadRace(TurnbackError):
    """Another writer published the head sequence number this writer wanted."""

    code = "head-race"


class TooLarge(TurnbackError):
    """A file is over the size limit for capture; `data` has path, size (so far) and limit."""

    code = "too-large"


class Untrusted(TurnbackError):
    """A workspace, store, configuration, log or lock that is not the user's own, that others can
    write, or that is a symbolic link (store/trust.py); nothing in it is read or written."""

    code = "untrusted"


class LockTimeout(TurnbackError):
    """A file lock another process held past its budget (store/ownership/locks.py); nothing was changed."""

    code = "lock-timeout"

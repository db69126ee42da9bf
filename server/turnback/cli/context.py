"""What every command needs: where the workspace and store are, how to open them, how to print."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ..errors import InvalidParams, NotFound, NotOwner, TurnbackError

OWNER_SETTLE_SECONDS = 3.0  # how long a command waits for an owner that holds the lease unreachably


class Context:
    def __init__(self, args, stdout=None, stderr=None, stdin=None):
        self.args = args
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        self.stdin = stdin or sys.stdin
        self.json = bool(getattr(args, "json", False))
        self.owned_here = False  # a command opened the store as its owner, in this process

    # -- places -----------------------------------------------------------------------------------
    @property
    def root(self) -> Path:
        given = self.args.workspace or os.getcwd()
        root = Path(given).absolute()
        if not root.is_dir():
            raise InvalidParams(f"the workspace {str(root)!r} is not a folder",
                                data={"workspace": str(root)})
        return root

    @property
    def store_path(self) -> Path:
        if self.args.store:
            return Path(self.args.store).absolute()
        return self.root / ".turnback"

    def existing_kind(self) -> str | None:
        """The kind of the store already there (read without writing anything), or None."""
        path = self.store_path
        if not os.path.lexists(path / "FORMAT"):
            return None
        from ..store.layout import Store

        return Store.open(path, kind=None, create=False).kind

    # -- opening ----------------------------------------------------------------------------------
    def open(self, *, own: bool = True, must_exist: bool = False):
        """Open the workspace's live session. With `own`, take ownership if no one else holds it (a
        running `turnback serve` does: then this is a read-only observer, and mutations refuse).
        With `must_exist`, a workspace without a store is an error instead of a new store."""
        import time

        # An owner that is starting or shutting down (an editor just closed) holds the lease while
        # its socket does not answer: look again for a moment before settling for an observer.
        deadline = time.monotonic() + (OWNER_SETTLE_SECONDS if own else 0.0)
        while True:
            wb = self._open_once(own=own, must_exist=must_exist)
            if getattr(wb, "is_owner", True) or time.monotonic() >= deadline:
                self._tell_recovered(wb)
                return wb
            wb.close()
            time.sleep(0.2)

    def _open_once(self, *, own: bool, must_exist: bool):
        from ..store.trust import require_place, require_workspace
        from .owner import open_through_owner

        # Another user's workspace or store, or one others can write: refused, whoever answers.
        require_workspace(self.root, self.store_path)
        require_place(self.root, self.store_path)
        through = open_through_owner(self.args, self.root.resolve(), self.store_path)
        if through is not None:  # a live owner answers: ask it, never open the store here
            return through
        from ..workbench import Options, Workbench

        root, store = self.root, self.store_path
        kind = self.existing_kind()
        if kind is None:
            if must_exist:
                raise NotFound(f"no turnback store at {store}: nothing has been recorded in this "
                               "workspace yet (start with `turnback turn begin` or an editor)",
                               data={"path": str(store)})
            kind = self.args.store_kind or "heads"
        wb = Workbench.open(root, Options(store_kind=kind, store_path=str(store), lazy_turns=True),
                            take_ownership=own)
        if own:  # this process commits, so it runs [hooks] after-rewind (and waits: it exits next)
            from ..hooks import after_rewind

            after_rewind.attach(wb, background=False)
            self.owned_here = self.owned_here or wb.is_owner
        return wb

    def _tell_recovered(self, wb) -> None:
        """The command that recovered an interrupted transaction says what it did, on stderr (so a
        --json document on stdout stays one document)."""
        notice = getattr(wb, "recovery_notice", lambda: None)()
        if notice is not None:
            for line in notice["transactions"] + notice["forks"]:
                self.note(f"recovered: {line['message']}")

    @staticmethod
    def require_owner(wb) -> None:
        """Refuse a mutation up front, naming the process that owns the store."""
        if wb.is_owner:
            return
        owner = wb.owner_info() or {}
        raise NotOwner(
            f"another turnback (pid {owner.get('pid')} on {owner.get('host')}) owns the store "
            f"{wb.store.path}; nothing was changed. Use that session (for example the editor that "
            "runs `turnback serve`), or stop it and try again.",
            data={"owner": {"pid": owner.get("pid"), "host": owner.get("host")}})

    # -- printing ---------------------------------------------------------------------------------
    def print(self, *lines: str) -> None:
        for line in lines:
            print(line, file=self.stdout)

    def emit(self, document) -> None:
        print(json.dumps(document, indent=2, ensure_ascii=False, default=str), file=self.stdout)

    def note(self, text: str) -> None:
        print(text, file=self.stderr)

    def fail(self, exc: TurnbackError) -> None:
        print(f"error [{exc.code}]: {exc.message}", file=self.stderr)

    def interactive(self) -> bool:
        try:
            return self.stdin.isatty() and self.stdout.isatty()
        except (AttributeError, ValueError):
            return False

    def confirm(self, question: str) -> bool:
        """An interactive yes (only ever asked on a terminal)."""
        try:
            print(f"{question} Type yes to confirm: ", end="", file=self.stdout, flush=True)
            answer = self.stdin.readline()
        except (EOFError, OSError):
            return False
        return answer.strip().lower() in ("yes", "y")

"""The batch child: `python -m turnback.collect.child <store path>`.

Reads a CBOR list of head sequence numbers on stdin (an empty input means every head), observes
those head records read-only, and writes one CBOR map `{"v": 1, "obs": [...]}` to stdout. It opens
nothing for writing, takes no ownership and never mutates the store: the parent alone mutates, after
checking ownership and head stability, and warms its cache from these observations.

Why a child: a cold scan of hundreds of head records is many small reads and allocations; done in
the server process it would hold the editor's event loop, done here it costs the parent only the
polling of a pipe between slices.
"""

from __future__ import annotations

import sys

import cbor2

from .scan import observe_many

PROTOCOL = 1


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        sys.stderr.write("usage: python -m turnback.collect.child <store path>\n")
        return 2
    raw = sys.stdin.buffer.read()
    seqs = cbor2.loads(raw) if raw else None
    if seqs is not None and (not isinstance(seqs, list) or not all(isinstance(s, int) for s in seqs)):
        sys.stderr.write("stdin must be a CBOR list of head sequence numbers\n")
        return 2
    out = cbor2.dumps({"v": PROTOCOL, "obs": observe_many(argv[0], seqs)})
    sys.stdout.buffer.write(out)
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

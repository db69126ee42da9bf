"""The batch child: `python -m turnback.collect.child <store path>`.

Reads a CBOR list of head sequence numbers on stdin (an empty input means every head), observes
those head records read-only, and writes one CBOR map `{"v": 1, "obs": [...]}` to stdout. It opens
nothing for writing, takes no ownership and never mutates the store: the parent alone mutates, after
checking ownership and head stability, and warms its cache from these observations.

Why a child: a cold scan of hundreds of head records is many small reads and allocations; done in
the server process it would hold the editor's event loop, done here it costs the parent only the
polling of a pipe between slices. `observations` is the parent's side: it starts the child on a
helper thread and pauses the collection's slices while it runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import cbor2

from .scan import facts_of, observe_many
from .slices import SlicedJob, Slices

PROTOCOL = 1


def observations(job: SlicedJob, store_path: Path, seqs: list[int]) -> Slices[list[Any] | None]:
    """Observe `seqs` in the batch child, pausing `job`'s slices meanwhile; None if the child could
    not do it (then the caller scans in process)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TURNBACK_")}
    pkg_parent = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_parent, env.get("PYTHONPATH")) if p)
    box: dict[str, Any] = {}
    request = cbor2.dumps(seqs)

    def talk() -> None:
        # Started here, not on the loop: fork and exec of a big process take milliseconds.
        try:
            proc = subprocess.Popen([sys.executable, "-m", "turnback.collect.child", str(store_path)],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env=env, close_fds=True)
        except OSError as exc:
            box["error"] = exc
            return
        box["proc"] = proc
        try:
            box["out"] = proc.communicate(request)
        except Exception as exc:  # reported as a failed child below
            box["error"] = exc

    worker = threading.Thread(target=talk, name="turnback-collect-child", daemon=True)
    worker.start()
    while True:
        worker.join(0.002)  # at most 2 ms of a slice spent waiting
        if not worker.is_alive():
            break
        yield from job._pause()
    proc = box.get("proc")
    if proc is None:
        return None
    job.stats["child"] = True
    out = box.get("out")
    if out is None or proc.returncode != 0:
        return None
    try:
        doc = cbor2.loads(out[0])
        obs = doc["obs"]
        if doc.get("v") != 1 or not isinstance(obs, list) \
                or sorted(o[0] for o in obs) != sorted(seqs):
            return None
        for o in obs:
            facts_of(o)  # validates the shape
    except Exception:
        return None
    job.progress["done"] += len(obs)
    return obs


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

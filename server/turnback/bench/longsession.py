"""long-session: 300 turns, a transcript growing every turn, four publications a minute.

The record's 2.5-hour session retained 2,850 generations, about 7.3 GB. We replay a session of the same
publication count: every turn lasts 5 to 14 ticks of 15 simulated seconds (four publications a minute,
2,850 in all at `full`); each tick appends assistant text, edits one or two files (captured as an agent
hook would), and every other tick logs a tool step with a persisted result. The debounced publication
is the workbench's own (`maybe_publish`), driven by the simulated clock instead of the wall clock; the
last tick of a turn is its settlement. Every 30 turns a collection that keeps every head (the record
kept all 2,850) repacks: what is loose moves into a pack, the versions of each file as deltas. The
figures up to `store-disk-bytes-all-heads` are of that whole history. Then one collection with the
default retention (the current head, the newest head of every Redo group, the 8 newest; heads
younger than `graceSeconds` are not kept, since our session is minutes old and the record's was
hours, as in the history scenarios): what a user can still go back to is every turn, which is what
the peer's commits keep, and `store-disk-bytes` is put beside the peer.

The peer: a shadow git repository over the same workspace, one commit after every settled turn (300
at `full`), then `git gc`; our store folder on disk is put beside its git directory.

Figures: bytes stored (every object) against the unique bytes the session produced (distinct file
images, the final transcript, tool results), and what the metadata costs (bodies and turn objects).

`long-session-edits` is the same session with edits as an agent makes them: each new version of a
file is its previous one with one to three hunks of a few lines replaced, inserted or removed
(`long-session` writes every version afresh from slices of a shared text pool, so a version shares
nothing in particular with the one before it, and neither our deltas nor git's find much).
"""

from __future__ import annotations

import os
import shutil

import cbor2

from . import gen
from .common import (begin, keepalive, open_wb, run_job, settle, store_objects, uris,
                     verify_objects, write)
from .peer import ShadowGit
from .runner import disk_usage

SEED = "long"


def _ticks(i: int) -> int:
    return 5 + (i * 7) % 10  # 5..14, mean 9.5


KINDS = ("file-images", "response-chunks", "tool-results", "turns", "reference-lists", "known-shards",
         "bodies", "other-metadata", "unclassified")
_META = {"turn": "turns", "refs": "reference-lists", "known": "known-shards", "body": "bodies"}


def _kind_of(digest: str, data: bytes, images: set[str], results: set[str]) -> str:
    if digest in images:
        return "file-images"
    if digest in results:
        return "tool-results"
    if data[:1] in (b"\xa3", b"\xbf"):  # a CBOR map: one of the codec's own objects
        try:
            doc = cbor2.loads(data)
        except Exception:  # noqa: BLE001 - then it is plain data after all
            doc = None
        if isinstance(doc, dict) and isinstance(doc.get("t"), str) and "p" in doc:
            return _META.get(doc["t"], "other-metadata")
    return "response-chunks" if _utf8(data) else "unclassified"


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def breakdown(store, images: set[bytes], results: set[bytes]) -> dict[str, list[int]]:
    """kind -> [objects, raw bytes, stored bytes] over every object of the store."""
    h = store.hasher
    image_ds = {h.digest(b) for b in images}
    result_ds = {h.digest(b) for b in results}
    out = {k: [0, 0, 0] for k in KINDS}
    for d in store.objects.list():
        data = store.objects.get(d)
        row = out[_kind_of(d, data, image_ds, result_ds)]
        row[0] += 1
        row[1] += len(data)
        row[2] += store.objects.stored_size(d) or 0
    return out


def _journal_bytes(store) -> int:
    return sum(e.stat().st_size for e in os.scandir(store.journal_dir) if e.is_file())


def _delta_read_cost(ctx, store) -> None:
    """What the deepest delta chain costs to read, beside a whole object of the same pack (each
    read with the block cache emptied: the cost of a restore's first read)."""
    import time

    from ..store.objects.packformat import NONE

    deepest = None
    for pack in store.objects.packs.packs.values():
        doc = pack.doc
        for i in range(doc.count):
            depth, j = 0, i
            while doc.entry(j)[3] != NONE and depth < 64:
                j, depth = doc.entry(j)[3], depth + 1
            if deepest is None or depth > deepest[0]:
                deepest = (depth, doc.digest_at(i).hex(), doc.digest_at(j).hex())
    if deepest is None or deepest[0] == 0:
        ctx.fig("delta-read-deepest", 0, "s", note="no delta was written")
        return
    depth, tip, whole = deepest

    def timed_read(digest, n=10):
        out = []
        for _ in range(n):
            store.objects.packs._cache.clear()
            t0 = time.perf_counter()
            store.objects.get(digest)
            out.append(time.perf_counter() - t0)
        return sorted(out)[len(out) // 2]
    ctx.fig("delta-read-deepest", timed_read(tip), "s", baseline=timed_read(whole),
            source="its chain's whole base, read alone",
            note=f"a chain of {depth} deltas (the longest); each read starts with no block cached")
    ctx.check("the deepest delta reads back to its digest", store.objects.verify(tip))


def agent_edit(r, data: bytes) -> bytes:
    """`data` with one to three hunks changed as an agent's edit tool does: a few lines replaced by
    new ones, new lines inserted, or lines removed."""
    lines = data.splitlines(keepends=True) or [b"\n"]
    for _ in range(r.randrange(1, 4)):
        at = r.randrange(len(lines) + 1)
        cut = r.choice((0, 1, 2, 3, 5, 8))
        new = gen.text(r, r.randrange(40, 400)).splitlines(keepends=True) if r.random() < 0.85 else []
        lines[at:at + cut] = new
    return b"".join(lines)


def run_edits(ctx) -> None:
    run(ctx, edits="agent")


def run(ctx, edits: str = "fresh") -> None:
    turns = ctx.pick(12, 60, 300)
    root = ctx.dir("ws")
    shutil.rmtree(root)  # a fresh session, even in a reused --workdir
    shutil.rmtree(ctx.work / ctx.scenario / "shadow.git", ignore_errors=True)
    sizes = gen.write_tree(root, 200, SEED)
    paths = sorted(sizes)
    r = gen.rng(SEED, "session")
    unique_images: set[bytes] = {gen.tree_content(SEED, rel, s) for rel, s in sizes.items()}
    results: set[bytes] = set()
    responses: list[str] = []
    current = {rel: gen.tree_content(SEED, rel, s) for rel, s in sizes.items()}
    wb = open_wb(root, publish_interval=1e9)  # we drive the debounce with the simulated clock
    peer = ShadowGit(ctx.work / ctx.scenario / "shadow.git", root, ctx.dir("home"))
    peer.init()
    git_time = 0.0
    collections: list[dict] = []
    publications = 0
    try:
        for i in range(1, turns + 1):
            n = begin(wb, f"turn {i}: keep going")
            text = []
            ticks = _ticks(i)
            for tick in range(1, ticks + 1):
                keepalive(wb)
                chunk = gen.text(r, r.randrange(800, 2400)).decode()
                wb.turns.respond({"turn": n, "text": chunk})
                text.append(chunk)
                edited = r.sample(paths[:60], r.randrange(1, 3))  # agents revisit a working set
                for rel in edited:
                    if edits == "agent":
                        data = agent_edit(r, current[rel])
                    else:
                        data = gen.content(f"{SEED}:{rel}", sizes[rel] + r.randrange(-300, 600),
                                           i * 100 + tick)
                    write(root, rel, data)
                    current[rel] = data
                    unique_images.add(data)
                wb.turns.capture({"uris": uris(wb, edited)})
                if tick % 2 == 0:
                    result = gen.text(r, r.randrange(500, 4000)).decode()
                    wb.turns.step({"turn": n, "kind": "shell", "scope": "host", "summary": "run tests",
                                   "result": result})
                    results.add(result.encode())
                if tick < ticks:
                    wb.options.publish_interval = 0.0  # fifteen simulated seconds have passed
                    publications += wb.maybe_publish() is not None
                    wb.options.publish_interval = 1e9
            settle(wb, n)
            publications += 1
            responses.append("".join(text))
            git_time += peer.checkpoint(f"turn {i}")[1]
            if i % 30 == 0 or i == turns:
                collections.append(run_job(wb, wb.collection.job(grace_heads=10 ** 9,
                                                                 grace_seconds=1e12)))
        store = wb.store
        heads = store.heads.list_seqs()
        body_bytes = sum(store.objects.stat(store.heads.read(s).body) or 0 for s in heads)
        journal_peak = _journal_bytes(store)
        all_disk, _ = disk_usage(store.path)
        collections.append(run_job(wb, wb.collection.job(grace_seconds=0.0)))
        kept = store.heads.list_seqs()
    finally:
        wb.close()
    kinds = breakdown(store, unique_images, results)
    _delta_read_cost(ctx, store)
    our_disk, our_apparent = disk_usage(store.path)
    t_gc = peer.gc()
    git_disk, git_apparent = disk_usage(peer.git_dir)

    objects_n, stored = store_objects(store.objects)
    transcript = sum(len(t.encode()) for t in responses)
    unique = sum(len(b) for b in unique_images) + transcript + sum(len(b) for b in results)
    ctx.fig("turns", turns, "turns")
    ctx.fig("publications", len(heads), "heads", baseline=2850 if ctx.scale == "full" else None,
            source="record" if ctx.scale == "full" else None)
    ctx.fig("heads-kept", len(kept), "heads", note="what the default retention kept, at the end")
    ctx.fig("bytes-stored", stored, "bytes",
            baseline=7.3e9 if ctx.scale == "full" else None,
            source="record, about 7.3 GB" if ctx.scale == "full" else None)
    ctx.fig("unique-bytes", unique, "bytes", note="distinct file images + final transcript + tool results")
    ctx.fig("stored-over-unique", stored / unique, "ratio", note="raw (uncompressed) object bytes")
    on_disk = sum(row[2] for row in kinds.values())
    ctx.fig("stored-compressed", on_disk, "bytes", baseline=stored, source="the same objects, raw",
            note="object files as written: zstd envelopes where they pay")
    ctx.fig("compressed-over-unique", on_disk / unique, "ratio")
    ctx.fig("store-disk-bytes-all-heads", all_disk, "bytes", baseline=git_disk,
            source="git gc of the same commits", note=f"every one of the {len(heads)} heads kept")
    ctx.fig("store-disk-bytes", our_disk, "bytes", baseline=git_disk,
            source=f"git gc of the same {turns} turns' commits, same run",
            note=f"git: {git_time:.1f} s of commits, gc {t_gc:.1f} s; the store holds the transcript, "
                 "tool results and every head too")
    ctx.fig("store-apparent-bytes", our_apparent, "bytes", baseline=git_apparent,
            source="git after gc, apparent")
    ctx.fig("deltas", sum(c["deltas"] for c in collections), "objects",
            note=f"{len(collections)} collections: {sum(c['objectsPacked'] for c in collections)} "
                 f"objects packed, {sum(c['headsRetired'] for c in collections)} heads retired")
    for kind, (count, raw, packed) in kinds.items():
        if count:
            ctx.fig(f"{kind}-bytes", raw, "bytes", note=f"{count} objects, {packed} bytes stored")
    ctx.fig("journal-bytes", journal_peak, "bytes", note="the journal at the end, before close")
    ctx.fig("body-bytes", body_bytes, "bytes", note="head bodies: each lists every object its state reaches")
    ctx.fig("transcript-bytes", transcript, "bytes")
    ctx.fig("objects", objects_n, "objects")

    # Correctness: a fresh process reads back the same conversation and the same file images, and
    # every stored object verifies.
    ctx.check("every tick and settlement published a head", publications == len(heads),
              f"{publications} publications, {len(heads)} heads")
    wb = open_wb(root)
    try:
        state = wb.state
        ctx.check("the reopened session has every turn's full transcript",
                  [t.response for t in state.turns] == responses)
        hasher = wb.store.hasher
        ctx.check("the last known image of every file is what is on disk",
                  all(state.known.get(rel) == hasher.digest(data) for rel, data in current.items()))
        n, bad = verify_objects(wb.store.objects, list(wb.store.objects.list()))
        ctx.check("every stored object verifies", not bad, f"{len(bad)} of {n} damaged")
    finally:
        wb.close()

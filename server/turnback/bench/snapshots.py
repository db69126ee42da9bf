"""alternating-snapshots: 12 turns alternating two 128 KiB images of one file.

The record's writer stored 24 files (3 MiB) for this replay before its fix, because snapshot names were
per path and version. Ours names every image by its content digest, so the two images are stored once.
Each turn saves the file three times (repeated saves within a turn must reuse the checkpoint).
"""

from __future__ import annotations

from . import gen
from .common import begin, session, settle, store_objects, uris, verify_objects, write

SIZE = 128 << 10
TURNS = 12
SAVES_PER_TURN = 3
REL = "assets/logo.bin"


def run(ctx) -> None:
    root = ctx.dir("ws")
    images = [gen.content("alt-A", SIZE), gen.content("alt-B", SIZE)]
    write(root, REL, images[0])
    expected_after = {}
    with session(root) as wb:
        for n in range(1, TURNS + 1):
            turn = begin(wb, f"turn {n}: swap the logo")
            img = images[n % 2]  # turn 1 writes B, turn 2 A, ...
            for _save in range(SAVES_PER_TURN):
                write(root, REL, img)
                wb.turns.capture({"uris": uris(wb, [REL])})
            wb.turns.respond({"turn": turn, "text": f"swapped to image {'AB'[n % 2]}"})
            settle(wb, turn)
            expected_after[n] = img
        objects = wb.store.objects
        image_objects = image_bytes = 0
        for d in objects.list():
            if objects.stat(d) == SIZE and objects.get(d) in images:
                image_objects += 1
                image_bytes += SIZE
        total_objects, total_bytes = store_objects(objects)
        ctx.fig("image-objects", image_objects, "objects", baseline=24, source="record, before its fix")
        ctx.fig("image-bytes", image_bytes, "bytes", baseline=3 << 20, source="record, before its fix")
        ctx.fig("store-objects", total_objects, "objects",
                note="every object, metadata included (turns, shards, bodies)")
        ctx.fig("store-bytes", total_bytes, "bytes", baseline=3 << 20, source="record, before its fix",
                note="every object, metadata included")
        ctx.fig("heads", len(wb.store.heads.list_seqs()), "heads")

        # Correctness: every checkpoint names the right bytes, one entry per turn despite 3 saves.
        log = wb.turns.log()["turns"]
        ok = len(log) == TURNS
        for t in log:
            files = t["files"]
            if len(files) != 1 or files[0]["captures"] < 1:
                ok = False
                continue
            e = files[0]
            ok &= objects.get(e["after"]) == expected_after[t["turn"]]
            ok &= objects.get(e["before"]) == images[(t["turn"] + 1) % 2]
            ok &= e["checkpoint"].endswith("@v1")
        ctx.check("each turn's checkpoint holds the expected before and after bytes", ok)
        ctx.check("the two images are stored once each", image_objects == 2,
                  f"{image_objects} image objects")
        n, bad = verify_objects(objects, list(objects.list()))
        ctx.check("every stored object verifies", not bad, f"{len(bad)} of {n} damaged")
        # Rewind before the last prompt: the file must return to the end of turn 11 (image B).
        c = wb.rewind.prepare({"boundary": {"kind": "beforePrompt", "turn": TURNS}})
        r = wb.rewind.commit({"boundary": {"kind": "beforePrompt", "turn": TURNS},
                              "planHash": c["planHash"]})
        ctx.require("rewind committed", r.get("status") == "committed", str(r))
        ctx.check("the rewound file holds the bytes of the end of turn 11",
                  (root / REL).read_bytes() == expected_after[TURNS - 1])

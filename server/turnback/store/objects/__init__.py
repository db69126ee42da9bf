"""The object space: content-addressed, write-once payloads, laid out like restic's repository.

`objectstore.ObjectStore` is the one door (put, batch, get, list, remove). Beneath it: `digest`
(seeded xxh3-128 and the `Digest` type), `loose` (one file per object), `packs` and `packwrite`
(reading and writing packs), `packformat` (their bytes on disk), `delta` and `envelope` (zstd
deltas and loose envelopes), `zstdctx` (kept compression contexts), `headpack` (the pack of old
heads). Importing this package imports nothing: the hooks' fast path checks a folder's trust
without it.
"""

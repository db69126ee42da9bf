"""The storage floor: every byte turnback keeps, and the one seam through which it writes.

Modules: `fs/` (the file-system seam: durability, and the hook `testing/` installs faults through), `digest` (seeded xxh3-128),
`records` (checksummed, versioned CBOR records), `objects` (content-addressed payloads), `journal`
(write-ahead frames), `heads` (published heads), `ownership` (lease and PID lock), `layout` (the
store folder), `fsck` (read-only checking). The on-disk format is in docs/storage-format.md.
"""

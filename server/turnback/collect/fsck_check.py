"""The fsck check this floor adds: every head's body reads, and every object it references exists.

Registered in `store.fsck.EXTRA_CHECKS` when `turnback.collect` is imported (its `__init__` imports
this module), so whoever runs fsck with the whole package loaded, the command line and the server
included, gets it. For a plain file store the same is checked for the sidecar record's body.
"""

from __future__ import annotations

from ..store import fsck as fsck_mod
from ..store.objects.digest import is_digest
from ..timeline.codec import StateCodec
from . import roots


def _check_body(store, codec: StateCodec, body: str, where, what: str, report, seen=None) -> None:
    """`seen`: reference lists already checked (their contents with them), not read again."""
    seen = set() if seen is None else seen
    try:
        doc = codec.read_body(body, skip=seen)
        refs = doc.get("refs")
        if not isinstance(refs, list) or not all(is_digest(r) for r in refs):
            raise ValueError("its refs are not a list of digests")
    except FileNotFoundError:
        report.add(where, f"{what} body object {body} is missing")
        return
    except Exception as exc:
        report.add(where, f"{what} body object {body} does not read: {getattr(exc, 'message', exc)}")
        return
    missing = [r for r in refs if r not in seen and not store.objects.has(r)]
    seen.update(r for r in refs if r not in missing)
    if missing:
        report.add(where, f"{what} references {len(missing)} missing object(s): "
                          f"{', '.join(missing[:3])}{' …' if len(missing) > 3 else ''}")


def check_head_bodies(store, report) -> None:
    codec = StateCodec(store.objects)
    seen: set[str] = set()  # objects already found present, shared reference lists among them
    try:
        seqs = store.heads.list_seqs()
    except Exception:  # a damaged pack of old heads: fsck has reported it; check the loose ones
        seqs = store.heads.loose_seqs()
    for seq in seqs:
        try:
            rec = store.heads.read(seq)
        except Exception:
            continue  # fsck has already reported the record itself
        _check_body(store, codec, rec.body, store.heads.path(seq), f"head {seq}", report, seen)
    if store.kind == "pid":
        try:
            body = roots.sidecar_body(store)
        except Exception:
            return  # reported by fsck's record checks
        if body is not None:
            _check_body(store, codec, body, store.sidecar_path, "the sidecar", report, seen)


def register() -> None:
    if check_head_bodies not in fsck_mod.EXTRA_CHECKS:
        fsck_mod.EXTRA_CHECKS.append(check_head_bodies)


register()

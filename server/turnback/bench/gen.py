"""Deterministic workload generators: every byte a scenario writes comes from a fixed seed.

Text is drawn from a fixed vocabulary so it compresses about as well as source code and prose do
(git's zlib gets the advantage it would get on a real repository). Large contents are slices of one
seeded pool, stamped with a unique header, so generating a 50 k-file tree or a 16 MiB image is cheap.
"""

from __future__ import annotations

import hashlib
import os
import random
from pathlib import Path

SEED = "turnback-bench-1"

_WORDS = ("def class return import from self value result None True False for in if else elif while "
          "with as try except finally raise yield lambda async await print len range list dict set "
          "tuple str int float bytes path file turn head store object digest capture rewind redo "
          "session state config error index node tree parent child manifest sidecar journal lease "
          "epoch slice budget scan mark sweep retain collect publish settle begin step respond agent "
          "the a an of to and or not is are was be this that it on at by we you they").split()
_PUNCT = ("(", ")", ":", ",", ".", " = ", " + ", "[", "]", "{", "}", " == ", " -> ")


def rng(*names: object) -> random.Random:
    key = "/".join([SEED, *map(str, names)]).encode()
    return random.Random(int.from_bytes(hashlib.sha256(key).digest()[:8], "big"))


def text(r: random.Random, size: int) -> bytes:
    """About `size` bytes of code-like text, generated word by word (use for small contents)."""
    out, n = [], 0
    while n < size:
        line = []
        indent = "    " * r.randrange(4)
        for _ in range(r.randrange(3, 12)):
            line.append(r.choice(_WORDS))
            if r.random() < 0.3:
                line.append(r.choice(_PUNCT))
        s = indent + " ".join(line) + "\n"
        out.append(s)
        n += len(s)
    return "".join(out).encode()[:size]


_POOL: dict[int, bytes] = {}


def pool(size: int = 4 << 20) -> bytes:
    """A seeded text pool (cached per process)."""
    if size not in _POOL:
        r = rng("pool", size)
        parts, n = [], 0
        while n < size:
            b = text(r, 64 << 10)
            parts.append(b)
            n += len(b)
        _POOL[size] = b"".join(parts)[:size]
    return _POOL[size]


def content(key: str, size: int, version: int = 0) -> bytes:
    """Deterministic content of `size` bytes for (key, version); different versions differ."""
    header = f"# {key} v{version}\n".encode()
    if size <= len(header):
        return header[:size]
    p = pool()
    r = rng("content", key, version)
    body = bytearray()
    need = size - len(header)
    while len(body) < need:
        start = r.randrange(0, len(p) - 4096)
        take = min(need - len(body), r.randrange(1024, 64 << 10), len(p) - start)
        body += p[start:start + take]
    return header + bytes(body[:need])


def big(key: str, size: int, version: int = 0) -> bytes:
    """Like `content` but for MiB sizes: one pool slice plus stamps every 64 KiB, so two versions
    differ throughout (no accidental sharing) without generating the bytes word by word."""
    p = pool(max(4 << 20, 1 << 20))
    r = rng("big", key, version)
    buf = bytearray()
    while len(buf) < size:
        start = r.randrange(0, len(p) - (64 << 10))
        buf += f"\n## {key} v{version} @{len(buf)}\n".encode() + p[start:start + (64 << 10)]
    return bytes(buf[:size])


def tree_paths(n: int) -> list[str]:
    """`n` workspace paths in a source-like layout: about 20 files per folder, three levels deep."""
    out = []
    for i in range(n):
        d = i // 20
        out.append(f"src/pkg{d // 400:02d}/mod{(d // 20) % 20:02d}/grp{d % 20:02d}/f{i:06d}.py")
    return out


def file_size(r: random.Random) -> int:
    """Sizes of source files: mostly 0.5-6 KiB, a tail to 64 KiB."""
    if r.random() < 0.9:
        return r.randrange(512, 6 << 10)
    return r.randrange(6 << 10, 64 << 10)


def write_tree(root: Path, n: int, seed: str = "tree") -> dict[str, int]:
    """Write `n` files under `root`; returns rel -> size (contents regenerate with `tree_content`)."""
    r = rng(seed, n)
    sizes = {}
    made: set[str] = set()
    for rel in tree_paths(n):
        size = file_size(r)
        folder = os.path.dirname(rel)
        if folder not in made:
            os.makedirs(root / folder, exist_ok=True)
            made.add(folder)
        with open(root / rel, "wb") as f:
            f.write(content(f"{seed}:{rel}", size))
        sizes[rel] = size
    return sizes


def tree_content(seed: str, rel: str, size: int) -> bytes:
    return content(f"{seed}:{rel}", size)

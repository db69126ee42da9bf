"""`turnback bench real-history` at tiny scale: five releases of requests from PyPI replayed as turns
through an owner and through the command line, beside a shadow git. Needs the registry (CI reaches
it); skipped, saying so, only when PyPI cannot be reached. No test here asserts a time."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile

import pytest

from turnback.bench import main, sdists

ROWS = ("turn-owner", "turn-cli", "turn-cli-vs-python", "rewind-owner", "redo-owner", "restore-owner",
        "rewind-cli", "redo-cli", "restore-cli", "bytes-cli", "bytes-owner", "bytes-objects-cli",
        "bytes-objects-owner", "bytes-floor")


@pytest.fixture(scope="module")
def registry():
    why = sdists.reachable()
    if why is not None:
        pytest.skip(f"PyPI is unreachable from here, so no real release can be fetched: {why}")


def test_tiny_replays_real_releases_byte_for_byte_beside_git(registry, tmp_path, capsys):
    code = main(["real-history", "--scale", "tiny", "--json", "--workdir", str(tmp_path)])
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    verdict = [line for line in lines if line["figure"] in ("correct", "unavailable")]
    assert verdict[0]["figure"] == "correct" and verdict[0]["value"] == 1, verdict
    assert verdict[0]["checks"] >= 20  # every rewind, the Redo and the restore, on both sides
    assert code == 0
    figures = {line["figure"]: line for line in lines}
    for row in ROWS:
        line = figures[f"requests-{row}"]
        assert line["baseline"] and line["ratio"] > 0, line  # every row beside git's of the same run
    assert figures["requests-releases"]["value"] == 5
    # the floor (every distinct version as one xz stream) is below what any store of them keeps
    assert figures["requests-bytes-floor"]["value"] < figures["requests-bytes-objects-cli"]["value"]
    # nothing downloaded lands in the work folder's trees but the releases' own files
    assert not list(tmp_path.rglob("*.tar.gz"))


def _tar(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755 if name.endswith(".sh") else 0o644
            tar.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("pkg-1.0/latest")
        link.type, link.linkname = tarfile.SYMTYPE, "run.sh"
        tar.addfile(link)
    return buf.getvalue()


def test_a_download_whose_sha256_is_not_the_registrys_is_refused_and_not_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("TURNBACK_BENCH_CACHE", str(tmp_path))
    good = _tar({"pkg-1.0/a.py": b"print(1)\n"})
    monkeypatch.setattr(sdists, "sdist_meta", lambda p, v: {
        "url": "https://example.invalid/pkg-1.0.tar.gz", "filename": "pkg-1.0.tar.gz",
        "sha256": hashlib.sha256(good).hexdigest()})
    monkeypatch.setattr(sdists, "_get", lambda url: good[:-1] + bytes([good[-1] ^ 1]))
    with pytest.raises(ValueError, match="sha256"):
        sdists.fetch("pkg", "1.0")
    assert not list(tmp_path.rglob("*.tar.gz"))
    monkeypatch.setattr(sdists, "_get", lambda url: good)
    assert sdists.fetch("pkg", "1.0").read_bytes() == good
    monkeypatch.setattr(sdists, "_get", lambda url: pytest.fail("a cached release is fetched again"))
    assert sdists.fetch("pkg", "1.0").read_bytes() == good


def test_a_release_tree_keeps_modes_and_links_and_drops_names_that_leave_it(tmp_path):
    archive = tmp_path / "x.tar.gz"
    archive.write_bytes(_tar({"pkg-1.0/run.sh": b"#!/bin/sh\n", "pkg-1.0/src/a.py": b"a\n",
                              "pkg-1.0/../evil": b"x", "/abs": b"y"}))
    tree = sdists.read_tree(archive)
    assert sorted(tree) == ["latest", "run.sh", "src/a.py"]
    assert tree["run.sh"].mode == 0o755 and tree["src/a.py"].mode == 0o644
    assert tree["latest"].link and tree["latest"].data == b"run.sh"

"""tools/build-dist's parts that need no registry (the whole build runs in .ci/release.sh): one version
everywhere, the package.el archive's shape, and the .vsix's split of libraries into common/ and cpXY/."""

from __future__ import annotations

import json
import re
import sys
import tarfile
from pathlib import Path

import turnback

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools"))

import dist_emacs  # noqa: E402
import dist_vsix  # noqa: E402


def test_every_client_says_the_servers_version():
    """build-dist stamps __version__ into what it ships; the checked-in copies say the same, so a
    client built by hand from a checkout does not claim another version."""
    v = turnback.__version__
    assert json.loads((REPO / "editor-clients/vscode/package.json").read_text())["version"] == v
    assert f'(define-package "turnback" "{v}"' in (REPO / "editor-clients/emacs/turnback-pkg.el").read_text()
    assert re.search(rf"^;; Version: {re.escape(v)}$", (REPO / "editor-clients/emacs/turnback.el").read_text(), re.M)
    project = (REPO / "pyproject.toml").read_text().split("[project]")[1].split("\n[")[0]
    assert 'dynamic = ["version"]' in project and not re.search(r"^version\s*=", project, re.M)


def test_the_emacs_archive_is_what_package_el_reads(tmp_path):
    wheel = tmp_path / "turnback-9.8.7-py3-none-any.whl"
    wheel.write_bytes(b"PK not really")
    tar_path = dist_emacs.build(REPO, tmp_path / "emacs", "9.8.7", wheel)
    contents = (tmp_path / "emacs" / "archive-contents").read_text()
    assert contents.startswith("(1\n (turnback . [(9 8 7) (")
    assert "(emacs (28 1))" in contents and '"Rewind and Redo for AI coding-agent sessions" tar' in contents
    with tarfile.open(tar_path) as tar:
        names = tar.getnames()
        pkg = tar.extractfile("turnback-9.8.7/turnback-pkg.el").read().decode()
    assert all(n.startswith("turnback-9.8.7/") for n in names)
    assert {"turnback-9.8.7/turnback.el", "turnback-9.8.7/turnback-install.el",
            "turnback-9.8.7/turnback-9.8.7-py3-none-any.whl"} <= set(names)
    assert not any("/test" in n for n in names)
    assert '(define-package "turnback" "9.8.7"' in pkg


def test_only_what_every_version_holds_identically_moves_to_common(tmp_path):
    libs = tmp_path / "libs"
    for tag, compiled in (("cp310", b"\x7fELF 310"), ("cp311", b"\x7fELF 311")):
        (libs / tag / "pygls").mkdir(parents=True)
        (libs / tag / "pygls" / "server.py").write_text("same\n")
        (libs / tag / "xxhash").mkdir()
        (libs / tag / "xxhash" / "_xxhash.so").write_bytes(compiled)
        (libs / tag / "typing_extensions.py").write_text("same\n")
    (libs / "cp310" / "tomli").mkdir()  # only 3.10 needs it
    (libs / "cp310" / "tomli" / "__init__.py").write_text("")
    dist_vsix.split_common(libs, ["cp310", "cp311"])
    assert sorted(p.name for p in (libs / "common").iterdir()) == ["pygls", "typing_extensions.py"]
    assert sorted(p.name for p in (libs / "cp310").iterdir()) == ["tomli", "xxhash"]
    assert sorted(p.name for p in (libs / "cp311").iterdir()) == ["xxhash"]


def _fake_dist(folder: Path, name: str, *requires: str) -> None:
    info = folder / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", "Version: 1.0", *(f"Requires-Dist: {r}" for r in requires)]
    (info / "METADATA").write_text("\n".join(lines) + "\n")
    (info / "RECORD").write_text("")


def test_a_bundle_missing_a_requirement_for_its_python_version_fails_the_build(tmp_path):
    """The 3.10 bundle once lacked tomli (`tomli; python_version < "3.11"`): pip check, run by that
    version with the bundle on PYTHONPATH, names it and build-dist stops."""
    libs = tmp_path / "libs"
    _fake_dist(libs / "common", "turnbackfake", 'tomlifake; python_version >= "3"')
    (libs / "cp3x").mkdir()
    env = {"PYTHONPATH": f"{libs / 'cp3x'}:{libs / 'common'}", "PYTHONNOUSERSITE": "1", "PATH": "/usr/bin:/bin"}
    try:
        dist_vsix._pip_check(sys.executable, env, libs, "cp3x")
    except SystemExit as stop:
        assert "turnbackfake 1.0 requires tomlifake" in str(stop)
    else:
        raise AssertionError("a missing requirement passed")
    _fake_dist(libs / "cp3x", "tomlifake")
    assert dist_vsix._pip_check(sys.executable, env, libs, "cp3x") == "pip check"

"""The fence: every reference either becomes a clean relative path or is refused."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnback.errors import InvalidParams, OutsideWorkspace, SymlinkRefused
from turnback.workspace import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "proj"
    root.mkdir()
    return Workspace(root, ".turnback")


def test_root_is_real_path(tmp_path: Path):
    real = tmp_path / "real"
    real.mkdir()
    alias = tmp_path / "alias"
    alias.symlink_to(real)
    w = Workspace(alias, ".turnback")
    assert w.root == real.resolve()
    # Both spellings of the root are accepted lexically.
    assert w.to_rel(str(alias / "a.txt")) == "a.txt"
    assert w.to_rel(str(real / "a.txt")) == "a.txt"


@pytest.mark.parametrize("ref,expected", [
    ("src/a.py", "src/a.py"),
    ("./src//a.py", "src/a.py"),
    ("src/x/../a.py", "src/a.py"),
    ("a b/c d.txt", "a b/c d.txt"),
    ("ünï/cödé ✓.txt", "ünï/cödé ✓.txt"),
    ("notes.txt", "notes.txt"),
])
def test_relative_paths_normalise(ws: Workspace, ref, expected):
    assert ws.to_rel(ref) == expected
    assert ws.to_rel(str(ws.root / ref)) == expected


@pytest.mark.parametrize("rel", ["a b/c d.txt", "ünï/cödé ✓.txt", "weird/%41#?;&=+$,.txt",
                                 "a:b/c", "日本/語.md"])
def test_uri_round_trip(ws: Workspace, rel):
    uri = ws.to_uri(rel)
    assert uri.startswith("file:///")
    assert " " not in uri and "#" not in uri.split("file://", 1)[1] and "?" not in uri
    assert uri.isascii()
    assert ws.to_rel(uri) == rel
    assert ws.abs_path(rel) == ws.root / rel


def test_uri_forms(ws: Workspace):
    p = str(ws.root / "a b.txt").replace(" ", "%20")
    assert ws.to_rel("file://" + p) == "a b.txt"
    assert ws.to_rel("file://localhost" + p) == "a b.txt"
    assert ws.to_rel("FILE://" + p) == "a b.txt"
    # Editors encode ':' and non-ASCII; lower-case escapes decode too.
    assert ws.to_rel("file://" + str(ws.root).replace(" ", "%20") + "/%c3%a9.txt") == "é.txt"


@pytest.mark.parametrize("ref", [
    "..", "../x", "a/../../x", "./..", "",
    ".", "./", "a/..",
    "/etc/passwd", "/",
    "x\x00y",
    "untitled:Untitled-1", "http://example.com/a.py", "vscode-notebook-cell:/x", "git:/a",
    "file://otherhost/etc/passwd",
    "file:///etc/passwd",
    "file:relative/path",
    "file:///%ff.txt",
    ".turnback", ".turnback/objects/ab/cd", ".TurnBack/objects", "x/../.turnback/FORMAT",
])
def test_escapes_refused(ws: Workspace, ref):
    with pytest.raises(OutsideWorkspace) as info:
        ws.to_rel(ref)
    assert info.value.code == "outside-workspace"


def test_absolute_escapes_refused(ws: Workspace, tmp_path: Path):
    for ref in [str(ws.root) + "/../x", str(ws.root), str(ws.root) + "/", str(ws.root) + "extra/a",
                str(tmp_path / "other.txt"), "file://" + str(ws.root) + "/../x",
                "file://" + str(ws.root) + "/a%00b", "file://" + str(ws.root)]:
        with pytest.raises(OutsideWorkspace):
            ws.to_rel(ref)


def test_store_message_names_the_store(ws: Workspace):
    with pytest.raises(OutsideWorkspace, match="turnback's store"):
        ws.to_rel(str(ws.root / ".turnback" / "FORMAT"))
    assert ws.in_store(".turnback") and ws.in_store(".turnback/x")
    assert not ws.in_store(".turnbackx") and not ws.in_store("a/.turnback")


def test_store_outside_root_fences_nothing(tmp_path: Path):
    root = tmp_path / "p"
    root.mkdir()
    w = Workspace(root, tmp_path / "elsewhere")
    assert w.store_rel is None
    assert w.to_rel(".turnback/x") == ".turnback/x"


def test_non_string_is_invalid(ws: Workspace):
    with pytest.raises(InvalidParams):
        ws.to_rel(42)  # type: ignore[arg-type]


def test_check_rel_requires_normal_form(ws: Workspace):
    assert ws.check_rel("a:b/c") == "a:b/c"  # no scheme detection for stored relative paths
    with pytest.raises(InvalidParams):
        ws.check_rel("a//b")
    with pytest.raises(OutsideWorkspace):
        ws.check_rel("../a")
    with pytest.raises(OutsideWorkspace):
        ws.check_rel("/abs")
    with pytest.raises(OutsideWorkspace):
        ws.check_rel(".turnback/x")


def test_is_under(ws: Workspace, tmp_path: Path):
    assert ws.is_under(ws.root / "a")
    assert ws.is_under(str(ws.root / "a" / "b"))
    assert not ws.is_under(ws.root)
    assert not ws.is_under(ws.root / ".." / "x")
    assert not ws.is_under(tmp_path / "projx" / "a")
    assert not ws.is_under("relative/a")


# ---------------------------------------------------------------- symlinks on disk


def test_check_components_accepts_plain_paths(ws: Workspace):
    (ws.root / "a" / "b").mkdir(parents=True)
    (ws.root / "a" / "b" / "f.txt").write_text("x")
    ws.check_components("a/b/f.txt")
    ws.check_components("a/b/missing/deeper.txt")
    ws.check_components("new/file.txt")


def test_symlinked_parent_leading_out_refused(ws: Workspace, tmp_path: Path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws.root / "link").symlink_to(outside)
    for rel in ["link/f.txt", "link/new/deep.txt"]:
        with pytest.raises(SymlinkRefused) as info:
            ws.check_components(rel)
        assert info.value.code == "symlink"
        with pytest.raises(SymlinkRefused):
            ws.ensure_parent_dirs(rel)
    assert list(outside.iterdir()) == []
    # Lexically fine, refused on disk: "link/../x" folds to "x" so it is allowed as a name, but a
    # path through the link itself is what check_components sees.
    assert ws.to_rel("link/../x") == "x"


def test_symlinked_parent_inside_refused_too(ws: Workspace):
    (ws.root / "real").mkdir()
    (ws.root / "alias").symlink_to(ws.root / "real")
    with pytest.raises(SymlinkRefused):
        ws.check_components("alias/f.txt")


def test_symlink_target_refused(ws: Workspace, tmp_path: Path):
    secret = tmp_path / "secret.txt"
    secret.write_text("s")
    (ws.root / "f.txt").symlink_to(secret)
    with pytest.raises(SymlinkRefused):
        ws.check_components("f.txt")
    (ws.root / "dangling").symlink_to(tmp_path / "nothing")
    with pytest.raises(SymlinkRefused):
        ws.check_components("dangling")


def test_parent_that_is_a_file_refused(ws: Workspace):
    (ws.root / "f").write_text("x")
    with pytest.raises(SymlinkRefused) as info:
        ws.check_components("f/g.txt")
    assert info.value.data["reason"] == "not-a-directory"
    with pytest.raises(SymlinkRefused):
        ws.ensure_parent_dirs("f/g/h.txt")


def test_ensure_parent_dirs_creates_with_umask_mode(ws: Workspace):
    old = os.umask(0o027)
    try:
        w = Workspace(ws.root, ".turnback")
    finally:
        os.umask(old)
    assert w.dir_mode == 0o750
    w.ensure_parent_dirs("a/b/c/file.txt")
    for sub in ["a", "a/b", "a/b/c"]:
        st_ = os.lstat(ws.root / sub)
        assert stat.S_ISDIR(st_.st_mode)
        assert stat.S_IMODE(st_.st_mode) == 0o750
    assert not (ws.root / "a/b/c/file.txt").exists()
    w.ensure_parent_dirs("a/b/c/file.txt")  # idempotent
    w.ensure_parent_dirs("top.txt")  # nothing to create


def test_ensure_parent_dirs_refuses_store(ws: Workspace):
    with pytest.raises(OutsideWorkspace):
        ws.ensure_parent_dirs(".turnback/objects/x")


_name = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"),
                min_size=1, max_size=8).filter(lambda s: s not in (".", ".."))


@settings(max_examples=200, deadline=None)
@given(st.lists(_name, min_size=1, max_size=4))
def test_property_uri_round_trip(tmp_path_factory, parts):
    root = tmp_path_factory.mktemp("prop", numbered=True)
    w = Workspace(root, ".turnback")
    rel = "/".join(parts)
    if w.in_store(rel):
        with pytest.raises(OutsideWorkspace):
            w.to_rel(rel)
        return
    uri = w.to_uri(rel)
    assert w.to_rel(uri) == rel
    assert w.to_rel(str(w.root / rel)) == rel


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "..", ".", "", ".turnback"]), min_size=1, max_size=6))
def test_property_result_is_clean_or_refused(tmp_path_factory, parts):
    root = tmp_path_factory.mktemp("prop2", numbered=True)
    w = Workspace(root, ".turnback")
    ref = "/".join(parts)
    try:
        rel = w.to_rel(ref)
    except OutsideWorkspace:
        return
    comps = rel.split("/")
    assert all(c not in ("", ".", "..") for c in comps)
    assert not w.in_store(rel)
    assert w.is_under(w.root / rel)

"""IgnoreRules: root and nested .gitignore, negation, info/exclude, .git and the store."""

from __future__ import annotations

from pathlib import Path

from turnback.capture.ignore import IgnoreRules


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def test_root_rules_and_negation(ws):
    write(ws.root, ".gitignore", "*.log\n!keep.log\nbuild/\n/only-top.txt\n# comment\n\n")
    r = IgnoreRules(ws)
    assert r.ignored("a.log", False)
    assert r.ignored("deep/x/a.log", False)
    assert not r.ignored("keep.log", False)
    assert not r.ignored("sub/keep.log", False)
    assert r.ignored("build", True)
    assert not r.ignored("build", False)  # directory-only pattern
    assert r.ignored("build/out.o", False)
    assert r.ignored("x/build/out.o", False)
    assert r.ignored("only-top.txt", False)
    assert not r.ignored("sub/only-top.txt", False)
    assert not r.ignored("src/main.py", False)


def test_nested_rules_are_relative_to_their_folder(ws):
    write(ws.root, ".gitignore", "*.tmp\n")
    write(ws.root, "pkg/.gitignore", "/gen.py\n!special.tmp\ncache/\n")
    r = IgnoreRules(ws)
    assert r.ignored("pkg/gen.py", False)
    assert not r.ignored("gen.py", False)
    assert not r.ignored("pkg/sub/gen.py", False)  # anchored to pkg/
    assert r.ignored("pkg/a.tmp", False)
    assert not r.ignored("pkg/special.tmp", False)  # deeper file overrides the root
    assert r.ignored("special.tmp", False)
    assert r.ignored("pkg/cache", True)
    assert not r.ignored("cache", True)


def test_cannot_reinclude_under_ignored_folder(ws):
    write(ws.root, ".gitignore", "out/\n!out/keep.txt\n")
    r = IgnoreRules(ws)
    assert r.ignored("out/keep.txt", False)


def test_reinclude_with_star_pattern(ws):
    write(ws.root, ".gitignore", "out/*\n!out/keep.txt\n")
    r = IgnoreRules(ws)
    assert not r.ignored("out", True)
    assert r.ignored("out/other.txt", False)
    assert not r.ignored("out/keep.txt", False)


def test_info_exclude_has_lower_precedence(ws):
    write(ws.root, ".git/info/exclude", "*.secret\nnotes/\n")
    write(ws.root, ".gitignore", "!shown.secret\n")
    r = IgnoreRules(ws)
    assert r.ignored("a.secret", False)
    assert not r.ignored("shown.secret", False)
    assert r.ignored("notes/x.md", False)


def test_git_and_store_always_skipped(ws):
    write(ws.root, ".gitignore", "!.git\n!.turnback\n")
    r = IgnoreRules(ws)
    assert r.ignored(".git", True)
    assert r.ignored(".git/config", False)
    assert r.ignored("vendor/lib/.git", True)
    assert r.ignored(".turnback", True)
    assert r.ignored(".turnback/objects/ab", False)
    assert not r.ignored(".gitignore", False)
    assert not r.ignored(".github/workflows/ci.yml", False)


def test_bad_and_symlinked_rule_files(ws, tmp_path):
    write(ws.root, ".gitignore", "\\\n[z-a]\n*.o\n")  # two unparsable lines are skipped
    (tmp_path / "evil").write_text("*\n")
    (ws.root / "sub").mkdir()
    (ws.root / "sub" / ".gitignore").symlink_to(tmp_path / "evil")
    r = IgnoreRules(ws)
    assert r.ignored("x.o", False)
    assert not r.ignored("sub/file.py", False)  # the symlinked .gitignore is not read


def test_invalidate_picks_up_changes(ws):
    r = IgnoreRules(ws)
    assert not r.ignored("a.txt", False)
    write(ws.root, ".gitignore", "a.txt\n")
    assert not r.ignored("a.txt", False)  # cached
    r.invalidate()
    assert r.ignored("a.txt", False)


# ---------------------------------------------------------------- differential test against git

import shutil  # noqa: E402
import subprocess  # noqa: E402

import pytest  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from turnback.workspace import Workspace  # noqa: E402

_PATTERNS = ["*.log", "!keep.log", "build/", "/top.txt", "a/b", "doc/*.txt", "**/foo", "foo/**",
             "a/**/b", "*", "!*/", "!a", "b/", "!b/c", "x*", "!x1", "deep/", "!deep/keep", "?.md",
             "[ab].txt", "\\!bang", "#hash", "sp\\ ace", "a/", "!*.log"]
_NAMES = ["a", "b", "c", "x1", "x2", "foo", "doc", "build", "deep", "keep", "keep.log", "z.log",
          "top.txt", "a.txt", "c.md", "!bang", "sp ace"]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(root_rules=st.lists(st.sampled_from(_PATTERNS), max_size=5),
       sub_rules=st.lists(st.sampled_from(_PATTERNS), max_size=4),
       sub=st.sampled_from(["a", "doc", "deep", "c"]),
       files=st.lists(st.lists(st.sampled_from(_NAMES), min_size=1, max_size=4).map("/".join),
                      min_size=1, max_size=12))
def test_walk_agrees_with_git(tmp_path_factory, root_rules, sub_rules, sub, files):
    from turnback.capture.statcache import StatCache
    from turnback.capture.sweep import sweep
    from sweepkit import real_objects

    root = tmp_path_factory.mktemp("gitdiff", numbered=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    written: set[str] = set()
    for rel in files:
        parts = rel.split("/")
        if any("/".join(parts[:i]) in written for i in range(1, len(parts))):
            continue
        if any(w.startswith(rel + "/") for w in written) or rel in written:
            continue
        write(root, rel, "x")
        written.add(rel)
    (root / ".gitignore").write_text("\n".join(root_rules) + "\n")
    if (root / sub).is_dir() or not (root / sub).exists():
        write(root, f"{sub}/.gitignore", "\n".join(sub_rules) + "\n")
    out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--others", "--exclude-standard"],
                         check=True, capture_output=True).stdout
    expected = {p.decode() for p in out.split(b"\0") if p}
    w = Workspace(root, ".turnback")
    got = set(sweep(w, real_objects(), StatCache(), max_bytes=100).images)
    assert got == expected


def test_directory_only_negation_and_ancestor_matches(ws):
    """Found by the differential test: "!*/" re-includes every folder; "!keep.log" is about the
    folder keep.log itself, not about files below it."""
    write(ws.root, ".gitignore", "*.log\n!*/\n")
    r = IgnoreRules(ws)
    assert not r.ignored("keep.log", True)
    assert not r.ignored("keep.log/a", False)
    assert r.ignored("keep.log/b.log", False)
    write(ws.root, ".gitignore", "*.log\n!keep.log\n")
    r.invalidate()
    assert not r.ignored("keep.log", True)
    assert r.ignored("keep.log/x.log", True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(root_rules=st.lists(st.sampled_from(_PATTERNS), max_size=5),
       sub_rules=st.lists(st.sampled_from(_PATTERNS), max_size=4),
       exclude=st.lists(st.sampled_from(_PATTERNS), max_size=2),
       sub=st.sampled_from(["a", "doc", "deep", "c"]),
       files=st.lists(st.lists(st.sampled_from(_NAMES), min_size=1, max_size=4).map("/".join),
                      min_size=1, max_size=12))
def test_the_kept_rules_of_a_full_sweep_judge_every_path_as_the_disk_did(
        tmp_path_factory, root_rules, sub_rules, exclude, sub, files):
    """capture/lastrules.py: the snapshot a full sweep leaves, stored and loaded again, gives every
    path (walked, under an ignored folder, or not there at all) the verdict the rules on disk gave,
    and it no longer reads the disk once the rule files change."""
    from turnback.capture import lastrules
    from turnback.capture.statcache import StatCache
    from turnback.capture.sweep import sweep
    from sweepkit import real_objects

    root = tmp_path_factory.mktemp("kept", numbered=True)
    for rel in files:
        parts = rel.split("/")
        if not any((root / "/".join(parts[:i])).is_file() for i in range(1, len(parts) + 1)) \
                and not (root / rel).exists():
            write(root, rel, "x")
    (root / ".gitignore").write_text("\n".join(root_rules) + "\n")
    if (root / sub).is_dir() or not (root / sub).exists():
        write(root, f"{sub}/.gitignore", "\n".join(sub_rules) + "\n")
    write(root, ".git/info/exclude", "\n".join(exclude) + "\n")
    w = Workspace(root, ".turnback")
    rules = IgnoreRules(w)
    sweep(w, real_objects(), StatCache(), max_bytes=100, rules=rules)
    kept = lastrules.decode(lastrules.encode([rules.snapshot()]))
    probes = {rel for rel in files} | {f"{rel}/new.txt" for rel in files} | {"new/x.log", "z.log"}
    fresh = IgnoreRules(w)
    expected = {rel: fresh.ignored(rel, False) for rel in probes}
    for rule_file in (root / ".gitignore", root / sub / ".gitignore", root / ".git/info/exclude"):
        if rule_file.parent.is_dir():
            rule_file.write_text("!*\n")  # the disk changes; the kept rules must not
    replayed = IgnoreRules.replay(w, kept[0])
    assert {rel: replayed.ignored(rel, False) for rel in probes} == expected


def test_damaged_kept_rules_load_as_unknown(tmp_path):
    from turnback.capture import lastrules
    from turnback.capture.ignore import RulesSnapshot

    path = tmp_path / "cache" / lastrules.FILE_NAME
    snap = RulesSnapshot({"": ("build/", "bad \udcff name")}, ("*.o",), ("*~",))
    lastrules.save(path, [snap])
    assert lastrules.load(path) == [snap]
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    data = path.read_bytes()
    for broken in (data[:-1], data[:10] + bytes([data[10] ^ 1]) + data[11:], b"", b"TBIR"):
        path.write_bytes(broken)
        assert lastrules.load(path) is None
    assert lastrules.load(tmp_path / "missing") is None

"""Trust only your own (issue 21, item 1): a store, configuration, hook log, lock or agent record that
is not the user's, that others can write, or that is a link, is refused. A hook then exits 0 having
written nothing anywhere (so a planted store never hears the prompt and a planted `block = true` is
not obeyed); the command line says why and exits non-zero; the upward walk never passes a folder that
is not the user's. Tried with a real second user (root only) and with modes and owners changed."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from hookkit import TURNBACK, hook_log, prompts, tb

ROOT = os.geteuid() == 0
SECOND_USER = "tbhookpath"  # a user of these tests' own (created once, when the tests run as root)
SECRET = "the db password is hunter2"


def prompt(cwd, text=SECRET) -> bytes:
    return json.dumps({"session_id": "s", "transcript_path": None, "cwd": str(cwd),
                       "hook_event_name": "UserPromptSubmit", "prompt": text}).encode()


def run_hook(cwd, body: bytes, *, user=None, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(TURNBACK + ["hook", "claude-code"], input=body, capture_output=True,
                          cwd=cwd, env={**os.environ, "TURNBACK_IDLE_EXIT": "30", **(env or {})},
                          timeout=120, user=user, group=_gid(user) if user else None,
                          extra_groups=[] if user else None)


def everything_under(folder: Path) -> bytes:
    out = b""
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            p = Path(dirpath) / name
            if p.is_file() and not p.is_symlink():
                out += p.read_bytes()
    return out


def _gid(user):
    import pwd

    return pwd.getpwnam(user).pw_gid


@pytest.fixture(scope="module")
def second_user():
    """A real second account (uid, name): made with useradd when these tests run as root."""
    if not ROOT:
        pytest.skip("a real second user needs root (useradd); the chmod tests below run anyway")
    import pwd

    try:
        entry = pwd.getpwnam(SECOND_USER)
    except KeyError:
        proc = subprocess.run(["useradd", "--system", "--no-create-home", "--shell",
                               "/usr/sbin/nologin", SECOND_USER], capture_output=True, text=True)
        if proc.returncode not in (0, 9):  # 9: made meanwhile by a parallel run
            pytest.skip(f"useradd failed: {proc.stderr.strip()}")
        entry = pwd.getpwnam(SECOND_USER)
    return entry.pw_uid, SECOND_USER


@pytest.fixture
def shared():
    """A folder like /tmp (mode 1777) that both users reach; /tmp's own children, as pytest's
    temporary folders are private to root."""
    path = Path("/tmp") / f"turnback-shared-{uuid.uuid4().hex[:10]}"
    path.mkdir()
    path.chmod(0o1777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _others_may_run(path: str) -> bool:
    path = os.path.realpath(path)
    folders = [os.path.dirname(path)]
    while os.path.dirname(folders[-1]) != folders[-1]:
        folders.append(os.path.dirname(folders[-1]))
    return os.stat(path).st_mode & 0o001 and all(os.stat(f).st_mode & 0o001 for f in folders)


def foreign(argv_tail: list[str]) -> tuple[list[str], dict]:
    """A Python of this version that another user may run (this venv's may live in a private home
    folder), with turnback and its packages on its path."""
    import pygls

    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (sys.executable, f"/usr/bin/{version}", f"/usr/local/bin/{version}"):
        if os.path.exists(candidate) and _others_may_run(candidate):
            break
    else:
        pytest.skip(f"no {version} that another user may run")
    import turnback

    path = [str(Path(turnback.__file__).parents[1]), str(Path(pygls.__file__).parents[1])]
    if not all(_others_may_run(p) for p in path):
        pytest.skip("turnback's source or packages are in a folder other users cannot enter")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": os.pathsep.join(path),
           "PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp"}
    return [candidate, *argv_tail], env


def as_user(user: str, argv_tail: list[str], **kw) -> subprocess.CompletedProcess:
    argv, env = foreign(argv_tail)
    return subprocess.run(argv, user=user, group=_gid(user), extra_groups=[], capture_output=True,
                          env=env, timeout=120, **kw)


def planted_by(user: str, script: str, *args: str) -> None:
    proc = as_user(user, ["-c", script, *args], text=True)
    assert proc.returncode == 0, proc.stderr


PLANT = """
import os, sys
shared = sys.argv[1]
store = os.path.join(shared, ".turnback")
os.makedirs(os.path.join(store, "agents"))
for folder in (store, os.path.join(store, "agents")):
    os.chmod(folder, 0o777)
for name in ("FORMAT", "agents/hook.log", "agents/state.json"):
    with open(os.path.join(store, name), "w") as fh:
        fh.write("")
    os.chmod(os.path.join(store, name), 0o666)
with open(os.path.join(shared, "turnback.toml"), "w") as fh:
    fh.write("[hooks]\\nblock = true\\n")
os.chmod(os.path.join(shared, "turnback.toml"), 0o666)
"""


def test_a_store_planted_in_a_shared_folder_never_hears_the_prompt(second_user, shared):
    _uid, user = second_user
    planted_by(user, PLANT, str(shared))
    project = shared / "proj"  # the victim's own folder, in the shared one
    project.mkdir()
    before = everything_under(shared)
    proc = run_hook(project, prompt(project))
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")  # block = true not obeyed
    assert SECRET.encode() not in everything_under(shared)
    assert everything_under(shared) == before
    planted = shared / ".turnback"
    assert not (planted / "lease.cbor").exists() and not (planted / "run").exists()  # no owner
    # In the planted folder itself the command line refuses, saying why, and exits non-zero.
    cli = tb(shared, "info", check=False)
    assert cli.returncode != 0 and "untrusted" in cli.stderr, cli.stderr


def test_the_second_user_refuses_a_store_root_planted_in_their_folder(second_user, shared):
    _uid, user = second_user
    project = shared / "proj"  # the victim's own folder
    planted_by(user, "import os, sys; os.mkdir(sys.argv[1])", str(project))
    agents = project / ".turnback" / "agents"  # planted in it by another user (root, here)
    agents.mkdir(parents=True)
    (project / ".turnback" / "FORMAT").write_text("")
    (agents / "hook.log").write_text("")
    os.chmod(agents / "hook.log", 0o666)
    proc = as_user(user, ["-m", "turnback", "hook", "claude-code"], input=prompt(project),
                   cwd=project)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")
    assert (agents / "hook.log").read_bytes() == b""
    assert sorted(os.listdir(project / ".turnback")) == ["FORMAT", "agents"]  # no lease, no socket
    cli = as_user(user, ["-m", "turnback", "info", "--workspace", str(project)], text=True)
    assert cli.returncode != 0 and "error [untrusted]" in cli.stderr and "belongs to root" \
        in cli.stderr, cli.stderr


def hook_here(monkeypatch, capfd, cwd, body: bytes) -> tuple[int, str, str]:
    """`turnback hook claude-code` run in this process (the same entry point), from `cwd`."""
    import io

    from turnback.cli.fast import main

    monkeypatch.chdir(cwd)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(body)))
    capfd.readouterr()
    code = main(["hook", "claude-code"])
    out, err = capfd.readouterr()
    return code, out, err


def cli_here(capfd, *argv: str) -> tuple[int, str, str]:
    from turnback.cli.main import main

    capfd.readouterr()
    code = main(list(argv))
    out, err = capfd.readouterr()
    return code, out, err


def logged_prompts(capfd, root) -> list[str]:
    code, out, err = cli_here(capfd, "log", "--json", "--workspace", str(root))
    assert code == 0, err
    return [t["prompt"] for t in json.loads(out)["turns"]]


@pytest.fixture
def ws(tmp_path, monkeypatch, capfd):
    """A workspace of the user's own with one recorded prompt (direct path: no owner to stop)."""
    monkeypatch.setenv("TURNBACK_HOOK_DIRECT", "1")
    root = tmp_path / "ws"
    root.mkdir()
    (root / "turnback.toml").write_text("")
    assert hook_here(monkeypatch, capfd, root, prompt(root, "first")) == (0, "", "")
    assert logged_prompts(capfd, root) == ["first"]
    return root


def _chmod(mode):
    def change(path):
        os.chmod(path, mode)

    change.__name__ = f"chmod{mode:o}"
    return change


def _chown(path):
    os.chown(path, 54321, -1, follow_symlinks=False)


def _link(path):
    target = path.with_name(path.name + ".real")
    os.rename(path, target)
    os.symlink(target.name, path)


def _fifo(path):
    os.unlink(path)
    os.mkfifo(path, 0o600)


CASES = [  # (what is changed, how, whether only root may do it)
    (".turnback", _chmod(0o777), False),
    (".turnback/agents", _chmod(0o757), False),
    (".turnback/FORMAT", _chmod(0o666), False),
    (".turnback/agents/hook.log", _chmod(0o622), False),
    (".turnback/agents/hook.log", _link, False),
    (".turnback/agents/hook.log", _fifo, False),
    (".turnback/agents/lock", _link, False),
    (".turnback/agents/state.json", _chmod(0o646), False),
    ("turnback.toml", _chmod(0o666), False),
    ("turnback.toml", _link, False),
    (".turnback/config.toml", _chmod(0o602), False),
    (".turnback", _chown, True),
    (".turnback/agents/lock", _chown, True),
    (".turnback/agents/state.json", _chown, True),
    ("turnback.toml", _chown, True),
]


@pytest.mark.parametrize("rel, change, needs_root", CASES,
                         ids=[f"{rel}-{change.__name__}" for rel, change, _ in CASES])
def test_a_file_that_is_not_the_users_own_is_refused(ws, rel, change, needs_root, monkeypatch,
                                                     capfd):
    if needs_root and not ROOT:
        pytest.skip("chown to another user needs root")
    path = ws / rel
    if not os.path.lexists(path):
        path.write_text("[hooks]\nblock = true\n" if path.name.endswith(".toml") else "")
        os.chmod(path, 0o600)
    saved = {p: os.lstat(p) for p in (ws / ".turnback", ws / "turnback.toml")}
    log_before = _log_bytes(ws)
    change(path)
    assert hook_here(monkeypatch, capfd, ws, prompt(ws)) == (0, "", "")
    assert SECRET.encode() not in everything_under(ws / ".turnback")
    if change is not _fifo:
        assert _log_bytes(ws) == log_before  # not even a line in the refused store's log
    code, _out, err = cli_here(capfd, "log", "--json", "--workspace", str(ws))
    assert code != 0 and "error [untrusted]" in err and rel.split("/")[-1] in err, err
    _undo(ws, path, saved)
    assert hook_here(monkeypatch, capfd, ws, prompt(ws, "again"))[0] == 0  # trusted again
    assert logged_prompts(capfd, ws) == ["first", "again"]


def _log_bytes(ws) -> bytes:
    p = ws / ".turnback" / "agents" / "hook.log"
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return b""
    return p.read_bytes() if stat.S_ISREG(st.st_mode) else b""


def _undo(ws, path, saved) -> None:
    if path.is_symlink():
        real = path.with_name(path.name + ".real")
        os.unlink(path)
        os.rename(real, path)
    elif stat.S_ISFIFO(os.lstat(path).st_mode):
        os.unlink(path)
    else:
        os.chown(path, os.geteuid(), -1) if ROOT else None
        os.chmod(path, 0o700 if path.is_dir() else 0o600)
    for p, st in saved.items():
        if os.path.lexists(p) and not os.path.islink(p):
            os.chmod(p, stat.S_IMODE(st.st_mode))


def test_the_walk_stops_at_the_first_folder_that_is_not_the_users(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("TURNBACK_HOOK_DIRECT", "1")
    outer = tmp_path / "outer"
    outer.mkdir()
    (outer / "turnback.toml").write_text("")
    inner = outer / "mid" / "inner"
    inner.mkdir(parents=True)
    assert hook_here(monkeypatch, capfd, inner, prompt(inner, "seen"))[0] == 0
    assert logged_prompts(capfd, outer) == ["seen"]  # the walk goes up through the user's folders
    os.chmod(outer / "mid", 0o777)  # one folder on the way that every user may write
    assert hook_here(monkeypatch, capfd, inner, prompt(inner)) == (0, "", "")
    os.chmod(outer / "mid", 0o755)
    assert logged_prompts(capfd, outer) == ["seen"]
    if ROOT:
        os.chown(outer / "mid", 54321, -1)  # one folder on the way that is another user's
        assert hook_here(monkeypatch, capfd, inner, prompt(inner)) == (0, "", "")
        os.chown(outer / "mid", 0, -1)
        assert logged_prompts(capfd, outer) == ["seen"]
    assert SECRET.encode() not in everything_under(outer / ".turnback")


def test_group_writable_is_trusted_only_for_the_users_own_group(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("TURNBACK_HOOK_DIRECT", "1")
    root = tmp_path / "ws"
    root.mkdir()
    (root / "turnback.toml").write_text("")
    os.chmod(root, 0o775)  # umask 002 with per-user groups: the user's own group may write
    os.chmod(root / "turnback.toml", 0o664)
    assert hook_here(monkeypatch, capfd, root, prompt(root, "mine"))[0] == 0
    assert logged_prompts(capfd, root) == ["mine"]
    if ROOT:
        os.chown(root / "turnback.toml", -1, 54321)  # a group that is not the user's own
        assert hook_here(monkeypatch, capfd, root, prompt(root)) == (0, "", "")
        os.chown(root / "turnback.toml", -1, os.getegid())
        assert logged_prompts(capfd, root) == ["mine"]


def test_files_that_change_mode_under_a_running_owner_are_refused_and_logged(tmp_path):
    from turnback.remote import client

    root = tmp_path / "ws"
    root.mkdir()
    (root / "turnback.toml").write_text("")
    client.ensure_owner(str(root), str(root / ".turnback"), timeout=60)
    try:
        assert run_hook(root, prompt(root, "first")).returncode == 0
        state = root / ".turnback" / "agents" / "state.json"
        os.chmod(state, 0o666)
        proc = run_hook(root, prompt(root))
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")
        daemon_log = (root / ".turnback" / "run" / "daemon.log").read_text()
        assert "refused" in daemon_log and str(state) in daemon_log
        assert SECRET not in "\n".join(hook_log(root))
        log = client.call(str(root), "turnback/session/log", {})  # the owner still answers
        assert [t["prompt"] for t in log["turns"]] == ["first"]
        os.chmod(state, 0o600)
        assert run_hook(root, prompt(root, "then")).returncode == 0
        assert prompts(root) == ["first", "then"]
    finally:
        tb(root, "daemon", "stop", check=False)


def test_the_trust_check_reads_modes_without_following_links(tmp_path):
    from turnback.errors import Untrusted
    from turnback.store import trust

    mine = tmp_path / "mine"
    mine.write_text("")
    os.chmod(mine, 0o600)
    link = tmp_path / "link"
    link.symlink_to(mine)
    assert trust.check(mine, "file") is None and trust.check(tmp_path / "absent", "file") is None
    assert "symbolic link" in trust.check(link, "file")
    os.chmod(mine, 0o620)
    assert "group" in trust.check(mine, "file")
    assert trust.check(mine, "file", private=False) is None  # the user's own group
    os.chmod(mine, 0o602)
    assert "every user" in trust.check(mine, "file", private=False)
    with pytest.raises(Untrusted) as err:
        trust.require(mine, "hook log")
    assert err.value.code == "untrusted" and err.value.data["path"] == str(mine)

"""A socket nobody can squat (issue 21, item 4): where the owner binds, what it leaves alone, what a
client believes. Bad input: a socket path that is a link, a file, another user's, open to others; a
socket record (run/socket.path) that is a link, writable by others, another user's; a listener of
another user; the asking process's own socket; a run folder nobody can listen in."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
import subprocess
import sys

import pytest

from turnback.remote import client as remote
from turnback.remote.paths import inside_socket, pointer_path, trusted_socket, UnsafeSocket
from turnback.store.ownership.owners import who_owns

from .conftest import servers, ws  # noqa: F401 - fixtures
from .sockclient import socket_of
from .test_daemon import TB, daemons, tb

ROOT_ONLY = pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user")
OTHER = 65534  # nobody


def serve(root, store=None, env=None, check=True):
    argv = [*TB, "--workspace", str(root), "--json", "serve", "--background", "--idle-exit", "120"]
    if store is not None:
        argv += ["--store", str(store)]
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=root, timeout=60,
                          env={**os.environ, **(env or {})})
    if check:
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)
    return proc


@pytest.fixture
def long_root(tmp_path):
    """A workspace whose store path is too long for sun_path: its owner binds outside the store."""
    r = tmp_path / ("d" * 50) / ("e" * 50) / "ws"
    r.mkdir(parents=True)
    (r / "a.txt").write_text("one\n")
    yield r
    for p in daemons(r):
        p.kill()


@ROOT_ONLY
def test_a_squatted_runtime_folder_changes_nothing(long_root, short_tmp):
    """Another user's `mkdir -m 777 /tmp/turnback-UID` (the fixed name of old) and a folder of theirs
    of any other name: the owner makes a folder of its own, random and exclusive, and is reachable."""
    tmp = short_tmp / "t"
    tmp.mkdir()
    for name in (f"turnback-{os.getuid()}", "turnback-0000000000000000"):
        (tmp / name).mkdir(mode=0o777)
        os.chmod(tmp / name, 0o777)
        os.chown(tmp / name, OTHER, OTHER)
    env = {"TMPDIR": str(tmp), "XDG_RUNTIME_DIR": ""}
    started = serve(long_root, env=env)
    folder = os.path.dirname(started["socket"])
    assert os.path.dirname(folder) == str(tmp) and os.lstat(folder).st_uid == os.getuid()
    assert stat.S_IMODE(os.lstat(folder).st_mode) == 0o700
    assert sorted(os.listdir(tmp)) == sorted([f"turnback-{os.getuid()}", "turnback-0000000000000000",
                                              os.path.basename(folder)])
    status = json.loads(tb(long_root, "--json", "daemon", "status").stdout)
    assert status["running"] and status["pid"] == started["pid"]
    assert tb(long_root, "turn", "begin", "--prompt", "through the owner").stdout.strip() == "1"
    assert remote.call(long_root, "turnback/session/info", {})["running"] == 1
    tb(long_root, "daemon", "stop")
    assert not os.path.lexists(folder)  # its own folder goes with it


def _plant(kind: str, path: str, elsewhere) -> None:
    if kind == "file":
        with open(path, "w") as fh:
            fh.write("not a socket")
    elif kind == "link":
        target = socket.socket(socket.AF_UNIX)
        target.bind(str(elsewhere / "real.sock"))  # a link to a real socket is still a link
        os.symlink(elsewhere / "real.sock", path)
    elif kind == "open-to-others":
        s = socket.socket(socket.AF_UNIX)
        s.bind(path)
        s.close()
        os.chmod(path, 0o666)
    elif kind == "another-users":
        s = socket.socket(socket.AF_UNIX)
        s.bind(path)
        s.close()
        os.chown(path, OTHER, OTHER)


@pytest.mark.parametrize("kind", ["file", "link", "open-to-others",
                                  pytest.param("another-users", marks=ROOT_ONLY)])
def test_what_is_in_the_way_of_the_socket_is_left_alone(tmp_path, kind):
    root = tmp_path / "ws"
    root.mkdir()
    (root / ".turnback" / "run").mkdir(parents=True, mode=0o700)
    planted = inside_socket(str(root / ".turnback"))
    _plant(kind, planted, tmp_path)
    before = os.lstat(planted)
    try:
        started = serve(root)
        # the owner listens in a private folder of its own and the store records where
        assert started["socket"] != planted
        assert trusted_socket(str(root / ".turnback")) == started["socket"]
        assert remote.owner_socket(root) == started["socket"]
        assert tb(root, "turn", "begin", "--prompt", "reachable").stdout.strip() == "1"
        after = os.lstat(planted)
        assert (after.st_ino, after.st_mode, after.st_uid) == (before.st_ino, before.st_mode,
                                                              before.st_uid)
        tb(root, "daemon", "stop")
        assert os.lstat(planted).st_ino == before.st_ino  # still there, still what it was
        assert not os.path.lexists(started["socket"])
        assert not os.path.lexists(pointer_path(str(root / ".turnback")))
    finally:
        for p in daemons(root):
            p.kill()


@pytest.mark.parametrize("damage", ["link", "group-writable", "run-open",
                                    pytest.param("another-users", marks=ROOT_ONLY)])
def test_a_socket_record_that_is_not_the_users_own_is_never_believed(long_root, tmp_path, damage):
    started = serve(long_root)
    store = str(long_root / ".turnback")
    pointer = pointer_path(store)
    assert trusted_socket(store) == started["socket"]
    if damage == "link":
        decoy = tmp_path / "decoy"
        decoy.write_text(started["socket"] + "\n")
        os.unlink(pointer)
        os.symlink(decoy, pointer)
    elif damage == "group-writable":
        os.chmod(pointer, 0o620)
    elif damage == "run-open":
        os.chmod(os.path.dirname(pointer), 0o755)
    elif damage == "another-users":
        os.chown(pointer, OTHER, OTHER)
    with pytest.raises(UnsafeSocket):
        trusted_socket(store)
    with pytest.raises(remote.RemoteError) as info:
        remote.owner_socket(long_root)
    assert info.value.code == "unsafe-socket"
    proc = tb(long_root, "info", check=False)
    assert proc.returncode != 0 and "unsafe-socket" in proc.stderr
    for p in daemons(long_root):
        p.kill()


LISTENER = r"""
import os, socket, sys
folder, uid = sys.argv[1], int(sys.argv[2])
os.setgid(uid); os.setuid(uid)
s = socket.socket(socket.AF_UNIX); s.bind(os.path.join(folder, "owner.sock")); s.listen(4)
print("ready", flush=True)
s.settimeout(20)
conn, _ = s.accept(); conn.settimeout(2)
try:
    got = conn.recv(100)
except OSError:
    got = b""
print("received", len(got), flush=True)
"""


@ROOT_ONLY
def test_a_listener_of_another_user_is_never_sent_a_byte(tmp_path):
    """The socket file and its folder look like the user's own (changed after the bind), but the
    process listening is another user's: SO_PEERCRED says so, and nothing is sent."""
    root = tmp_path / "ws"
    (root / ".turnback" / "run").mkdir(parents=True, mode=0o700)
    import shutil
    import tempfile
    from pathlib import Path

    folder = Path(tempfile.mkdtemp(prefix="tb-theirs-", dir="/tmp"))  # reachable by that user
    os.chown(folder, OTHER, OTHER)
    child = subprocess.Popen([sys.executable, "-c", LISTENER, str(folder), str(OTHER)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        path = folder / "owner.sock"
        os.chown(folder, 0, 0)
        os.chown(path, 0, 0)
        os.chmod(path, 0o600)
        with open(pointer_path(str(root / ".turnback")), "w") as fh:
            fh.write(f"{path}\n")
        os.chmod(pointer_path(str(root / ".turnback")), 0o600)
        with pytest.raises(remote.RemoteError) as info:
            remote.call(root, "turnback/session/info", {})
        assert info.value.code == "unsafe-socket" and f"user {OTHER}" in info.value.message
        assert child.stdout.readline().strip() == "received 0"
    finally:
        child.kill()
        child.wait()
        shutil.rmtree(folder, ignore_errors=True)


async def test_the_asking_process_never_finds_its_own_socket(tmp_path):
    from turnback.lsp.sockets import Listener

    store = tmp_path / "store"
    store.mkdir()
    listener = Listener(None, str(store))
    path = await listener.start()
    try:
        assert await asyncio.to_thread(remote.owner_socket, tmp_path, store) is None
        with pytest.raises(remote.NoOwner):
            await asyncio.to_thread(remote.call, tmp_path, "turnback/session/info", {}, store=store)
    finally:
        listener.close()
    assert not os.path.lexists(path)


async def test_an_editor_that_cannot_listen_keeps_no_lease(ws, servers):  # noqa: F811
    """A run folder nobody can listen in: the editor's sidecar gives the lease up and serves its
    editor as an observer that says why; the command line then owns the store for its commands."""
    (ws / ".turnback").mkdir()
    (ws / ".turnback" / "run").write_text("a file where the run folder should be")
    editor = await servers(ws)
    info = await editor.req("turnback/session/info", {})
    for _ in range(200):
        if info["ownership"] == "observer":
            break
        await asyncio.sleep(0.05)
        info = await editor.req("turnback/session/info", {})
    assert info["ownership"] == "observer" and "run folder" in info["socketError"]
    assert who_owns(ws / ".turnback", "heads") is None
    proc = await asyncio.to_thread(tb, ws, "turn", "begin", "--prompt", "from the command line")
    assert proc.stdout.strip() == "1"
    log = await editor.req("turnback/session/log", {})  # the observer follows what was published
    assert [t["prompt"] for t in log["turns"]] == ["from the command line"]


@ROOT_ONLY
def test_a_background_owner_that_cannot_listen_releases_the_lease_and_exits(tmp_path):
    """Its run folder is another user's: it may not listen there, so it must not keep the lease."""
    root = tmp_path / "ws"
    root.mkdir()
    tb(root, "turn", "begin", "--prompt", "a store")
    run = root / ".turnback" / "run"
    run.mkdir(mode=0o700)
    os.chown(run, OTHER, OTHER)
    proc = serve(root, check=False)
    assert proc.returncode == 1 and "daemon-failed" in proc.stderr and "Traceback" not in proc.stderr
    assert "status 4" in proc.stderr
    assert who_owns(root / ".turnback", "heads") is None
    assert not [p for p in daemons(root) if p.is_running() and p.status() != "zombie"]
    log = (run / "daemon.log").read_text()
    assert "not a folder of yours" in log


def test_a_run_path_that_is_a_file_is_a_clear_error(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    tb(root, "turn", "begin", "--prompt", "a store")
    (root / ".turnback" / "run").write_text("a file")
    proc = serve(root, check=False)
    assert proc.returncode == 1 and "daemon-failed" in proc.stderr and "Traceback" not in proc.stderr
    assert who_owns(root / ".turnback", "heads") is None


async def test_a_socket_removed_under_its_owner_is_bound_again(ws, servers):  # noqa: F811
    editor = await servers(ws)
    path = await socket_of(editor)
    os.unlink(path)
    assert remote.owner_socket(ws) is None
    await editor.until(lambda: remote.owner_socket(ws) == path, timeout=30,
                       what="the owner to listen anew")
    assert remote.call(ws, "turnback/session/info", {})["owner"]["pid"] == editor.process.pid


@ROOT_ONLY
async def test_a_run_folder_given_to_another_user_under_its_owner(ws, servers):  # noqa: F811
    """Nobody may be asked to trust that socket any more: the owner stops listening there, cannot
    listen anywhere (its run folder is not its own), so it gives the lease up and says why."""
    editor = await servers(ws)
    await socket_of(editor)
    os.chown(ws / ".turnback" / "run", OTHER, OTHER)
    try:
        await editor.until(lambda: editor.status and editor.status[-1]["ownership"] == "observer",
                           timeout=30, what="the owner to give the store up")
        info = await editor.req("turnback/session/info", {})
        assert info["ownership"] == "observer" and "not a folder of yours" in info["socketError"]
        assert who_owns(ws / ".turnback", "heads") is None
    finally:
        os.chown(ws / ".turnback" / "run", 0, 0)

"""`[hooks] after-rewind` obeys store/trust.py: a `turnback.toml` someone else could have written is
never run. The command is the one thing in that file that executes, so each case pairs a refusal
with the same file made trustworthy, which runs (the test fails if trust is not what decides)."""

from __future__ import annotations

import json
import os
import sys

import pytest
from cli_helpers import cli, ws  # noqa: F401  (fixtures)
from test_after_rewind_hook import session  # two turns of a.txt: a1, a2

from turnback.hooks import after_rewind
from turnback.hooks.config import load

NOBODY = 65534  # another user: the owner of a planted file
MARK = "import pathlib; pathlib.Path('ran.txt').write_text('after-rewind ran')"


def plant(cli, *, mode: int = 0o644, owner: int | None = None):
    path = cli.root / "turnback.toml"
    path.write_text("[hooks]\nafter-rewind = " + json.dumps(f"{sys.executable} -c \"{MARK}\"") + "\n")
    os.chmod(path, mode)
    if owner is not None:
        os.chown(path, owner, -1)
    return path


def restore(cli):
    return cli("restore", "a.txt", "--turn", "1", "--yes")


def ran(cli) -> bool:
    return (cli.root / "ran.txt").exists()


def test_a_trusted_turnback_toml_runs_its_command(cli):
    session(cli)
    plant(cli)
    rc, _, err = restore(cli)
    assert rc == 0, err
    assert ran(cli)


@pytest.mark.parametrize("why, mode, owner", [
    ("others can write it", 0o666, None),
    ("its group can write it", 0o664, 4242),  # a group that is not this process's own
    ("another user planted it", 0o644, NOBODY),
])
def test_an_untrusted_turnback_toml_never_runs_its_command(cli, why, mode, owner):
    if os.geteuid() != 0 and owner is not None:
        pytest.skip("planting a file as another user needs root")
    session(cli)
    path = plant(cli, mode=mode)
    if owner == 4242:
        os.chown(path, -1, 4242)
    elif owner is not None:
        os.chown(path, owner, -1)
    rc, out, err = restore(cli)
    # Refused with the stable code before anything was written (the opener checks the file).
    assert rc != 0 and "untrusted" in err and "turnback.toml" in err, (why, rc, err)
    assert not ran(cli) and (cli.root / "a.txt").read_text() == "a2"
    # Planted after the store was opened (a live owner commits later): the runner's own read of the
    # configuration refuses it (named among its problems) and runs nothing.
    document = {"operation": "restore", "mode": "files", "files": ["a.txt"]}
    assert after_rewind.run(cli.root, cli.root / ".turnback", document) is None
    assert not ran(cli)
    said = (cli.root / ".turnback" / "agents" / "hook.log").read_text()
    assert "after-rewind" in said and "turnback.toml" in said and "refusing" in said, said
    config = load(cli.root, cli.root / ".turnback")
    assert config.after_rewind is None
    assert any("turnback.toml" in p and "refusing to use it" in p for p in config.problems), config.problems
    path.unlink()  # the planted file gone, the workspace works again and the command never ran
    assert cli("log")[0] == 0 and not ran(cli)


def test_a_folder_others_can_write_is_refused_with_its_planted_file(cli):
    session(cli)
    plant(cli)
    os.chmod(cli.root, 0o777)  # anyone could have put (or swapped in) this turnback.toml
    try:
        rc, _, err = restore(cli)
    finally:
        os.chmod(cli.root, 0o755)
    assert rc != 0 and "untrusted" in err
    assert not ran(cli) and (cli.root / "a.txt").read_text() == "a2"

"""Bad input in a real history (bench real-history-bad-input): symlinks, files that change only their
mode, a 100 MiB file, 10,000 files changed in one turn, each added as turns after a real requests
release from PyPI. Through a live owner (asked for its status every 50 ms throughout) and through
the command line with no owner: every rewind and the Redo give the right tree back byte for byte,
modes included, and name the gaps (each symlink path once). Needs the registry, like
test_real_history.py; skipped only when PyPI is unreachable. No test here asserts a time."""

from __future__ import annotations

import pytest

from turnback.bench import badinput, sdists
from turnback.bench.realhistory import _env


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    why = sdists.reachable()
    if why is not None:
        pytest.skip(f"PyPI is unreachable from here, so no real release can be fetched: {why}")
    return _env(tmp_path_factory.mktemp("pyc"))[0]


def _replay(kind, side, env, tmp_path):
    from turnback.remote import client

    checks = []
    badinput.run_kind(lambda what, ok, detail="": checks.append((what, bool(ok), detail)),
                      client, tmp_path, kind, env, side)
    failed = [c for c in checks if not c[1]]
    assert checks and not failed, failed[:5]
    return [c[0] for c in checks]


@pytest.mark.parametrize("side", ["owner", "cli"])
def test_symlinks_are_a_gap_named_once_per_path_and_the_rest_comes_back(side, env, tmp_path):
    checks = _replay("symlinks", side, env, tmp_path)
    assert any("names outside (symlink)" in c for c in checks)


@pytest.mark.parametrize("side", ["owner", "cli"])
def test_a_change_of_mode_alone_comes_back(side, env, tmp_path):
    """Through the owner a chmod alone was never recorded (its watcher's sweep of the dirty paths
    took no mode), so a rewind across it left the files executable."""
    _replay("mode-only", side, env, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("side", ["owner", "cli"])
def test_a_100_mib_file_is_a_too_large_gap_and_the_rest_comes_back(side, env, tmp_path):
    checks = _replay("big-file", side, env, tmp_path)
    assert any(f"names {badinput.BIG} (too-large)" in c for c in checks)


@pytest.mark.slow
@pytest.mark.parametrize("side", ["owner", "cli"])
def test_10000_files_changed_in_one_turn_come_back(side, env, tmp_path):
    """Through the owner the rewind's reply (3 MB) reached the command line slowly, and its reader
    lost the frame: `[unreachable] ... header too long`."""
    _replay("many-files", side, env, tmp_path)


@pytest.mark.parametrize("side", ["owner", "cli"])
def test_submodules_files_come_and_go_and_their_git_data_is_never_touched(side, env, tmp_path):
    checks = _replay("submodules", side, env, tmp_path)
    assert any(f"names {badinput.SUBMODULE} (folder-not-empty)" in c for c in checks)
    assert any(f"names {badinput.NESTED} (folder-not-empty)" in c for c in checks)

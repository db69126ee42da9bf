"""CI smoke test of the instrument: every scenario at `--scale tiny` reports its figures and passes its
own correctness check. No test here asserts a time."""

from __future__ import annotations

import json

import pytest

from turnback.bench import SCENARIOS, main


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    # One folder for the module, so the scenarios on the shared history build it once.
    return tmp_path_factory.mktemp("bench")


def _run(capsys, *argv) -> tuple[int, list[dict]]:
    code = main(list(argv))
    out = capsys.readouterr().out
    return code, [json.loads(line) for line in out.splitlines() if line.strip()]


# The real-history scenarios download releases from PyPI: tests/bench/test_real_history.py and
# test_real_history_bad_input.py run them.
@pytest.mark.parametrize("scenario", [s for s in SCENARIOS if not s.startswith("real-history")])
def test_scenario_reports_figures_and_passes_its_check(scenario, workdir, capsys):
    code, lines = _run(capsys, scenario, "--scale", "tiny", "--json", "--workdir", str(workdir))
    mine = [line for line in lines if line["scenario"] == scenario]
    for line in mine:
        assert {"scenario", "figure", "value", "unit"} <= set(line), line
        if line["figure"] not in ("correct", "wall", "unavailable"):
            assert isinstance(line.get("load"), (int, float)), line  # the machine's load, beside it
        if "baseline" in line and isinstance(line["value"], (int, float)) and line["baseline"]:
            assert line["ratio"] == pytest.approx(line["value"] / line["baseline"], rel=1e-3)
    unavailable = [line for line in mine if line["figure"] == "unavailable"]
    assert not unavailable, f"{scenario} is unavailable: {unavailable[0]['reason']}"
    verdict = [line for line in mine if line["figure"] == "correct"]
    assert len(verdict) == 1, mine
    assert verdict[0]["value"] == 1, verdict[0].get("reason")
    assert code == 0
    figures = [line for line in mine if line["figure"] not in ("correct", "wall")]
    assert figures, f"{scenario} reported no figure"
    assert all(line["value"] is not None for line in figures)
    assert lines[-1]["figure"] == "total-wall"


def test_unknown_scenario_is_a_usage_error(capsys):
    assert main(["no-such-scenario", "--scale", "tiny"]) == 2


def test_list_names_every_scenario(capsys):
    assert main(["--list"]) == 0
    assert capsys.readouterr().out.split() == list(SCENARIOS)


def test_a_fast_wrong_answer_fails_the_command(monkeypatch, workdir, capsys):
    """A rewind that claims success without restoring anything is fast and wrong: the scenario's own
    check catches it and the command exits non-zero."""
    from turnback.workbench.rewind import RewindFeature

    monkeypatch.setattr(RewindFeature, "commit", lambda self, params: {"status": "committed"})
    code, lines = _run(capsys, "alternating-snapshots", "--scale", "tiny", "--json",
                       "--workdir", str(workdir / "wrong"))
    verdict = [line for line in lines if line["figure"] == "correct"]
    assert code == 1
    assert verdict and verdict[0]["value"] == 0
    assert "rewound file" in verdict[0]["reason"]


def test_a_scenario_whose_subject_does_not_import_fails(monkeypatch, workdir, capsys):
    """An import error is a broken build: the scenario fails and the command exits 1 (it used to say
    `unavailable` and the smoke test skipped it)."""
    import sys

    for name in [m for m in sys.modules if m.startswith("turnback.collect")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "turnback.collect", None)  # `import turnback.collect` raises
    code, lines = _run(capsys, "responsiveness", "--scale", "tiny", "--json",
                       "--workdir", str(workdir / "noimport"))
    verdict = [line for line in lines if line["scenario"] == "responsiveness"
               and line["figure"] in ("correct", "unavailable")]
    assert code == 1
    assert verdict and verdict[0]["figure"] == "correct" and verdict[0]["value"] == 0
    assert "ImportError" in verdict[0]["reason"] or "ModuleNotFoundError" in verdict[0]["reason"]


def test_an_unavailable_scenario_fails_the_command(monkeypatch, workdir, capsys):
    from turnback.bench import runner

    def unavailable(ctx):
        raise runner.Unavailable("its subject cannot be measured here")
    monkeypatch.setattr(runner, "_load", lambda name: unavailable)
    code, lines = _run(capsys, "scan", "--scale", "tiny", "--json", "--workdir", str(workdir / "u"))
    assert code == 1
    assert [line["figure"] for line in lines if line["scenario"] == "scan"][0] == "unavailable"



def test_turn_fast_path_waits_out_an_owner_busy_with_its_first_checkpoint(tmp_path):
    """At 250,000 files under load the owner's first checkpoint left a status question unanswered for
    5 s; the client's wedge detector gave up and the scenario died before any figure. Its setup
    waits the first checkpoint out: a client that gives up on every stall, as it did, still gets
    through it (and the settlement's collection)."""
    from turnback.bench.fastpath import first_checkpoint
    from turnback.remote import client
    from turnback.remote.wire import RemoteError

    calls = []

    class OwnerBusyWithItsFirstCheckpoint:
        def call(self, workspace, method, params, *, timeout=30.0, stall=client.STALL_SECONDS):
            calls.append(method)
            if stall is not None:
                raise RemoteError("unresponsive", f"cannot answer {method}: it answered nothing "
                                  f"for {stall:g} s and not a status question within 5 s")
            return {"turnback/turn/begin": {"turn": 1}, "turnback/turn/settle": {"headSeq": 2},
                    "turnback/session/status": {"collecting": len(calls) < 4}}[method]

    seconds = first_checkpoint(OwnerBusyWithItsFirstCheckpoint(), tmp_path)
    assert calls == ["turnback/turn/begin", "turnback/turn/settle", "turnback/session/status",
                     "turnback/session/status"]
    assert seconds >= 0

"""The hook path's hand parser agrees with argparse on everything it accepts, and declines the rest."""

from __future__ import annotations

import pytest

from turnback.cli.fast import parse
from turnback.cli.main import build_parser

ACCEPTED = [
    ["turn", "begin", "--prompt", "fix it"],
    ["--json", "turn", "begin", "--prompt=fix it", "--directive", "d1"],
    ["turn", "begin", "--prompt", "p", "--kind", "chat", "--workspace", "/w"],
    ["--workspace", "/w", "--store", "/s", "turn", "capture", "a.txt", "b/c.txt"],
    ["turn", "capture", "--phase", "before", "a.txt", "--json"],
    ["turn", "step", "--kind", "shell", "--scope", "host", "--summary", "sed -i", "--path", "a", "b",
     "--held", "--inverse-kind", "file-restore", "--inverse-scope", "host", "--result", "ok"],
    ["turn", "step", "--turn", "3", "--kind", "network-send", "--compensates", "s1"],
    ["turn", "respond", "--final", "the answer"],
    ["turn", "respond", "--turn=2", "text"],
    ["turn", "settle"],
    ["turn", "settle", "--cancelled", "--turn", "4", "--store-kind", "pid"],
]
DECLINED = [
    ["turn", "begin"],                                    # --prompt is required
    ["turn", "begin", "--prompt", "p", "--kind", "odd"],  # not a choice
    ["turn", "capture"],                                  # a path is required
    ["turn", "capture", "--phase", "later", "a"],
    ["turn", "settle", "--turn", "x"],
    ["turn", "settle", "--help"],
    ["turn", "capture", "--", "-odd-name"],
    ["rewind", "--before-prompt", "1"],
    ["info"], ["log"], ["serve"], [],
]


@pytest.mark.parametrize("argv", ACCEPTED, ids=lambda a: " ".join(a))
def test_the_fast_parse_equals_argparse(argv):
    fast = parse(argv)
    assert fast is not None
    full = vars(build_parser().parse_args(argv))
    for key, value in vars(fast).items():
        assert full.get(key) == value, (key, full.get(key), value)


@pytest.mark.parametrize("argv", DECLINED, ids=lambda a: " ".join(a) or "(nothing)")
def test_the_fast_parse_declines_what_it_does_not_know(argv):
    assert parse(argv) is None

"""Every gap reason the server can send has words on the command line."""

from turnback.cli.render import GAP_TEXT
from turnback.model.gaps import GAP_REASONS


def test_every_gap_reason_has_words():
    assert set(GAP_REASONS) <= set(GAP_TEXT), sorted(set(GAP_REASONS) - set(GAP_TEXT))

"""The whole session against the reference model (issue 43): random sequences of turns, the user's
edits, rewinds, restores, Redo, gc and fsck, crashes and a live owner, compared with
`reference.py` after every step; Hypothesis shrinks a divergence to its shortest sequence.

Size: every CI run takes a bounded, derandomized run (a fixed seed: the same sequences each time);
`TURNBACK_MODEL_EXAMPLES` (sequences per machine) and `TURNBACK_MODEL_STEPS` (steps per sequence) make
it longer; `TURNBACK_MODEL_SEED` picks other sequences: seeds (`7`, `1-4` or `1,5`: each a
reproducible run of its own, a test per seed and machine, so `-n 2` splits them) or `random`
(docs/dev/model.md)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis.stateful import invariant
from machine import Machine
from owner_steps import OwnerSteps

EXAMPLES = int(os.environ.get("TURNBACK_MODEL_EXAMPLES", "8"))
STEPS = int(os.environ.get("TURNBACK_MODEL_STEPS", "16"))
SEED = os.environ.get("TURNBACK_MODEL_SEED", "").strip()  # unset: the suite's fixed sequences
TALLY = os.environ.get("TURNBACK_MODEL_TALLY")  # a file: a line per sequence, its machine and steps
SHRINK = os.environ.get("TURNBACK_MODEL_SHRINK", "1") != "0"  # 0: report the first failure as found

SIZE = settings(max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None,
                derandomize=not SEED, database=None, print_blob=True,
                suppress_health_check=list(HealthCheck),
                phases=[p for p in Phase if SHRINK or p not in (Phase.shrink, Phase.explain)])


class Tallied(OwnerSteps, Machine):
    """Counts the steps a sequence ran (Hypothesis may end one early, or reject a step's
    precondition), so a long run reports what it did, not what it asked for."""
    checks = 0

    @invariant()
    def counted(self):
        self.checks += 1  # after `start` (Hypothesis counts it a step), then after each step

    def teardown(self):
        try:
            super().teardown()
        finally:
            if TALLY:
                with open(TALLY, "a") as out:
                    out.write(f"{type(self).__name__} {max(0, self.checks - 1)}\n")


class WithoutOwner(Tallied):
    OWNER = False


class WithOwner(Tallied):
    OWNER = True


def seeds(text: str) -> list:
    """`` -> [None] (derandomized), `random` -> [None], `3`, `1-4`, `1,5` -> those integers."""
    if text in ("", "random"):
        return [None]
    found = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        found.extend(range(int(low), int(high or low) + 1))
    return found


for _seed in seeds(SEED):
    for _base in (WithoutOwner, WithOwner):
        _name = _base.__name__ + ("" if _seed is None else f"Seed{_seed}")
        _machine = _base if _seed is None else type(_name, (_base,), {})
        if _seed is not None:
            seed(2 * _seed + _base.OWNER)(_machine)  # the two machines draw different sequences
        _machine.TestCase.settings = SIZE
        globals()["Test" + _name] = _machine.TestCase

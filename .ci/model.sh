#!/usr/bin/env bash
# The reference model (tests/model, docs/dev/model.md) at fixed seeds, beyond the suite's own small
# derandomized run: the same sequences every CI, so a failure here is reproducible with its seed.
set -euo pipefail
cd "$(dirname "$0")/.."
TURNBACK_MODEL_SEED="${TURNBACK_MODEL_SEED:-1-2}" TURNBACK_MODEL_EXAMPLES="${TURNBACK_MODEL_EXAMPLES:-6}" \
  TURNBACK_MODEL_STEPS="${TURNBACK_MODEL_STEPS:-25}" \
  .venv/bin/python -m pytest -n 2 tests/model/test_model_machine.py -p no:cacheprovider -q

#!/usr/bin/env bash
# A long fuzzing session of every input kind through the CLI (tests/test_fuzz_inputs.py):
# N mutated cases per input kind (default 500), each limited to 30 s (a hang fails).
# `make test` runs the same properties with 60 cases each.
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-500}"
EMBSIM_FUZZ_EXAMPLES="$N" exec .venv/bin/python -m pytest -q -s -p no:cacheprovider \
    --tb=native tests/test_fuzz_inputs.py

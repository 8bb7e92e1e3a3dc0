#!/usr/bin/env bash
# A long fuzzing session of every input kind through the CLI: N mutated cases per input
# kind (default 500), each limited to 30 s (a hang fails). tests/test_fuzz_inputs.py
# fuzzes files and flags of every command; tests/test_fuzz_trainer_inputs.py the trainer
# inputs (--padding, --lengths, zoo defaults, validation files' embsim: and how,
# --nccl-env, GPU compute keys). `make test` runs the same properties with 60 cases each.
# Usage: fuzz_inputs.sh [N] [test file or node id ...] (default: both files)
set -euo pipefail
cd "$(dirname "$0")/.."
N="${1:-500}"
shift || true
[ "$#" -gt 0 ] || set -- tests/test_fuzz_inputs.py tests/test_fuzz_trainer_inputs.py
EMBSIM_FUZZ_EXAMPLES="$N" exec .venv/bin/python -m pytest -q -s -p no:cacheprovider \
    --tb=native "$@"

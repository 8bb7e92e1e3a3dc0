#!/usr/bin/env bash
# Every validation headline in one run (mean and max |simulated/measured - 1| per set), as the
# README and docs/validation.md quote them. Run from the repository root after `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
E=.venv/bin/embsim
echo "== collectives, packaged nccl-tests curves and points";  $E validate --nccl-tests | tail -1
echo "== training, packaged copies (what the real runs execute)";  $E validate --training | grep '^mean'
echo "== training, the issue's original files as given";  $E validate --training embsim/validation_data/training/original/*.yaml | grep '^mean'
echo "== training, held-out recommenders (DLE NCF, DLRM)";  $E validate --training embsim/validation_data/training/heldout/*.yaml | grep '^mean'
for trace in traces/cpu-gloo-*.yaml; do
  echo "== CPU trace $trace";  $E validate --trace "$trace" | tail -1
done

#!/usr/bin/env bash
# Regenerates docs/results/*: every strategy x scheduler for the four NLP models on
# 16 GPUs of pcie-rtx3090 (4x4) and on dgx-h100 16x8. Run from the repository root.
set -euo pipefail
EMBSIM=${EMBSIM:-".venv/bin/python -m embsim"}
mkdir -p docs/results
for topo in pcie-rtx3090:4x4 dgx-h100:16x8; do
  for model in lstm-lm1b gnmt transformer-wmt bert-base; do
    stem="${model}_${topo%%:*}"
    $EMBSIM compare --topology "$topo" --model "$model" --iterations 3 \
      --plot "docs/results/${stem}.png" --force --json > "docs/results/${stem}.json"
  done
done

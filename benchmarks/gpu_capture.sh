#!/usr/bin/env bash
# One-shot GPU capture (<= 10 minutes): per-layer kernels (CUDA events), NCCL sweeps and
# real training steps of bert-base, lstm-lm1b and a DLRM on every local GPU (world 1 on a single
# GPU). The same calibrate code as the CPU traces, with the device switched to CUDA.
#
#   benchmarks/gpu_capture.sh [OUT_DIR]      # default: traces/ (or $OUT when set)
set -euo pipefail
cd "$(dirname "$0")/.."
out_dir="${1:-${OUT:-traces}}"
mkdir -p "$out_dir"
py="${PYTHON:-python3}"
[ -x .venv/bin/python ] && py=.venv/bin/python
"$py" - <<'PY'
import torch
assert torch.cuda.is_available(), "gpu_capture.sh needs a CUDA device"
print("GPUs:", [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())],
      "CUDA", torch.version.cuda, "NCCL", torch.cuda.nccl.version())
PY
gpu=$("$py" -c "import torch; print(torch.cuda.get_device_name(0).replace('NVIDIA ', '').split()[0].lower())")
run() {  # model batch seq
  timeout 280 "$py" -m embsim calibrate \
    --backend nccl --model "$1" --batch "$2" --seq "$3" --max-bytes $((1 << 30)) \
    --out "$out_dir/gpu-$gpu-nccl-$1.yaml"
}
run bert-base 32 128      # BERT's pre-training shape (Devlin et al.: seq 128)
run lstm-lm1b 64 20       # LM1B LSTM: short BPTT windows, large vocabulary
# a recommender: per-sample rows, no --seq; DLE's small DLRM (batch 65536 as its README) with
# its 32.7M-row table cut to 2M rows (1 GiB; a calibration holds 11 copies)
timeout 280 "$py" -m embsim calibrate --backend nccl --model dlrm-criteo-f15 --batch 65536 \
  --max-rows 2000000 --max-bytes $((1 << 30)) --out "$out_dir/gpu-$gpu-nccl-dlrm-criteo-f15.yaml"
ls -l "$out_dir"

"""The per-timestep overhead of library RNN kernels, fitted on one named data set.

Published recurrent-layer timings (Baidu DeepBench README, "Recurrent Ops Results",
Tesla V100 mixed precision, cuDNN; fwd + bwd-data + bwd-weights of one layer) are 1.3x
to 5.9x the kernel model's GEMM + elementwise estimate on the V100's spec sheet, and the
excess per timestep is nearly constant (~130-150 µs) across shapes where the weights
are small: each timestep of cuDNN's RNN costs a fixed synchronisation/launch overhead
that GEMM shape does not explain. RECURRENT_STEP_S is the median excess per timestep
over the four published rows, forward + backward.

On another GPU the step is split in two (`recurrent_step_s`): a latency part that does
not depend on the math (launches, dependent-kernel drain, the step-to-step chain) and a
tensor-core part that shrinks with the GPU's tensor rate for the dtype. The latency part
is the median excess of DeepBench's smallest LSTM rows in its V100 results file
(results/train/DeepBench_NV_V100.xlsx, CUDA 10.1.243 / cuDNN 7.6.2: hidden <= 512, batch
<= 64, where the GEMMs are a few µs), where FP16 (tensor cores) and FP32 (CUDA cores)
show the same ~45 µs: it is not compute. The rest of the V100 fit (~87 µs) is charged at
V100's FP16 tensor rate and scaled by rate(V100 FP16) / rate(GPU, dtype); an FP32 step
(CUDA cores, no tensor path) is scaled by the GPU's 16-bit rate, which leaves V100 FP32 at
the fitted value. Caveat: the two parts come from two DeepBench runs (the README rows are
an older cuDNN than the xlsx). A calibrate-measured LSTM step replaces all of this on the
device it measured; every output names which was used.
"""

from __future__ import annotations

import statistics

from .kernel_time import kernels_time
from .kernels import gemm, stream
from .gemm_fit import V100
from .precision import precision

SOURCE = "DeepBench V100 recurrent results (baidu-research/DeepBench README)"

# (hidden, batch, timesteps, cell, gates, measured total ms): README "Recurrent Ops Results"
DEEPBENCH_V100 = (
    (1760, 16, 50, "vanilla", 1, 8.21),
    (2560, 32, 50, "vanilla", 1, 10.50),
    (1024, 128, 25, "lstm", 4, 5.56),
    (2816, 32, 1500, "gru", 3, 380.04),
)

# The V100 as the kernel model times it: spec-sheet peaks and the large-GEMM fraction and
# per-tile overhead fitted on DeepBench's V100 GEMM results (embsim.workload.gemm_fit);
# copy bandwidth as the dgx1-v100 preset (GPUInspector.jl memcpy, 0.862 of peak).
def recurrent_kernels(hidden: int, batch: int, steps: int, gates: int, e: int = 2):
    """One unidirectional layer (input size = hidden, as DeepBench runs it). The gate
    kernels are cuDNN's own (recurrent: the copy bandwidth, not the framework's fraction;
    the V100 here carries no per-step overhead, which is what this fit measures)."""
    g = gates * hidden
    fwd = [gemm("input", batch * steps, g, hidden),
           gemm("recurrent", batch, g, hidden, count=steps, ops=0),
           stream("gates", batch * g * e * 3, count=steps, ops=0, recurrent=True)]
    bwd = [stream("gates_bwd", batch * g * e * 4, count=steps, ops=0, recurrent=True),
           gemm("recurrent_dgrad", batch, hidden, g, count=steps, ops=0),
           gemm("input_dgrad", batch * steps, hidden, g),
           gemm("input_wgrad", hidden, g, batch * steps),
           gemm("recurrent_wgrad", hidden, g, batch * steps)]
    return fwd, bwd


def _excess_per_step_s(dtype: str, hidden: int, batch: int, steps: int, gates: int, ms: float) -> float:
    """Measured minus modelled seconds per timestep of one DeepBench row on the V100."""
    e = 2 if dtype == "fp16" else 4
    fwd, bwd = recurrent_kernels(hidden, batch, steps, gates, e)
    p = precision(dtype)
    model = kernels_time(fwd, V100, p, e) + kernels_time(bwd, V100, p, e)
    return (ms * 1e-3 - model) / steps


def step_excess_s() -> list[float]:
    """Measured minus modelled seconds per timestep, one per DeepBench row (mixed precision)."""
    return [_excess_per_step_s("fp16", hidden, batch, steps, gates, ms)
            for hidden, batch, steps, _, gates, ms in DEEPBENCH_V100]


RECURRENT_STEP_S = statistics.median(step_excess_s())

# (dtype, hidden, batch, timesteps, fwd + bwd-data + bwd-weights ms): the LSTM rows with
# hidden <= 512 and batch <= 64 of DeepBench_NV_V100.xlsx, sheets "Results FP32" and
# "Results - FP16 ip, Mixed math" (DGX-1 V100, CUDA 10.1.243, cuDNN 7.6.2)
DEEPBENCH_V100_SMALL_LSTM = (
    ("fp16", 512, 16, 25, 0.441 + 0.891 + 0.079), ("fp16", 512, 32, 25, 0.804 + 0.954 + 0.070),
    ("fp16", 512, 64, 25, 0.790 + 1.051 + 0.115), ("fp16", 256, 16, 150, 4.072 + 5.011 + 0.082),
    ("fp16", 256, 32, 150, 4.177 + 4.703 + 0.133), ("fp16", 256, 64, 150, 4.450 + 5.429 + 0.241),
    ("fp32", 512, 16, 25, 1.095 + 0.937 + 0.165), ("fp32", 512, 32, 25, 1.144 + 1.014 + 0.271),
    ("fp32", 512, 64, 25, 1.341 + 1.257 + 0.436), ("fp32", 256, 16, 150, 4.542 + 5.073 + 0.221),
    ("fp32", 256, 32, 150, 4.899 + 5.476 + 0.404), ("fp32", 256, 64, 150, 6.700 + 5.802 + 0.605),
)


def latency_excess_s() -> list[float]:
    """Measured minus modelled seconds per timestep on DeepBench's small LSTM rows."""
    return [_excess_per_step_s(dtype, hidden, batch, steps, 4, ms)
            for dtype, hidden, batch, steps, ms in DEEPBENCH_V100_SMALL_LSTM]


RECURRENT_LATENCY_S = statistics.median(latency_excess_s())
# the rest of the V100 fit, charged at V100's FP16 tensor rate
RECURRENT_TENSOR_S = RECURRENT_STEP_S - RECURRENT_LATENCY_S
V100_TENSOR_FLOPS = V100.rates["fp16"]


def recurrent_step_s(tensor_flops: float) -> float:
    """Per-timestep overhead (forward + backward) on a GPU whose step's GEMMs run at
    `tensor_flops` peak: the latency part plus the tensor part scaled from V100."""
    return RECURRENT_LATENCY_S + RECURRENT_TENSOR_S * V100_TENSOR_FLOPS / tensor_flops


if __name__ == "__main__":      # python -m embsim.workload.recurrent_fit: the per-row excess
    from ..toolargs import no_arguments
    no_arguments("embsim.workload.recurrent_fit", __doc__)
    rows = step_excess_s()
    print(f"RNN step overhead: {RECURRENT_STEP_S * 1e6:.0f} µs per timestep, the median of "
          + ", ".join(f"{x * 1e6:.0f}" for x in rows) + f" µs ({SOURCE})")
    lat = latency_excess_s()
    print(f"latency part: {RECURRENT_LATENCY_S * 1e6:.1f} µs, the median of "
          + ", ".join(f"{x * 1e6:.0f}" for x in lat) + " µs (DeepBench_NV_V100.xlsx small LSTM rows);"
          f" tensor part {RECURRENT_TENSOR_S * 1e6:.1f} µs at V100 FP16")

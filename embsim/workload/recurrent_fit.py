"""The per-timestep overhead of library RNN kernels, fitted on one named data set.

Published recurrent-layer timings (Baidu DeepBench README, "Recurrent Ops Results",
Tesla V100 mixed precision, cuDNN; fwd + bwd-data + bwd-weights of one layer) are 1.3x
to 5.9x the kernel model's GEMM + elementwise estimate on the V100's spec sheet, and the
excess per timestep is nearly constant (~130-150 µs) across shapes where the weights
are small: each timestep of cuDNN's RNN costs a fixed synchronisation/launch overhead
that GEMM shape does not explain. RECURRENT_STEP_S is the median excess per timestep
over the four published rows, forward + backward. It is used on every GPU that has no
measured LSTM step (calibrate measures one; every output names which was used).
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


def step_excess_s() -> list[float]:
    """Measured minus modelled seconds per timestep, one per DeepBench row."""
    p = precision("fp16")
    out = []
    for hidden, batch, steps, _, gates, ms in DEEPBENCH_V100:
        fwd, bwd = recurrent_kernels(hidden, batch, steps, gates)
        model = kernels_time(fwd, V100, p, 2) + kernels_time(bwd, V100, p, 2)
        out.append((ms * 1e-3 - model) / steps)
    return out


RECURRENT_STEP_S = statistics.median(step_excess_s())


if __name__ == "__main__":      # python -m embsim.workload.recurrent_fit: the per-row excess
    rows = step_excess_s()
    print(f"RNN step overhead: {RECURRENT_STEP_S * 1e6:.0f} µs per timestep, the median of "
          + ", ".join(f"{x * 1e6:.0f}" for x in rows) + f" µs ({SOURCE})")

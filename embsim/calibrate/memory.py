"""Will the calibration fit? An estimate of its peak memory, checked before any rank starts.

Without it, a model whose tables do not fit (a DLRM's 1e8-row tables, BERT-large on a
laptop) is killed by the kernel's OOM killer part-way through, with no message and no trace.

What a rank holds at its peak (worker.run_rank: the whole-step phase), in FP32 copies of the
model's parameters:
* each of the strategies (strategies.STRATEGIES) builds its own full model: parameters,
  gradients, and DDP's gradient buckets (DDP copies every gradient into flat buckets of the
  same total size) -> 3 copies each;
* the in-step sampler (instep.InStepSampler) keeps one more model: parameters and gradients.
Activations at calibrate's batches, the collective sweep (bounded by free memory on its own,
collectives.max_sweep_bytes) and the allocator's slack come on top, so the check refuses only
what cannot fit even without them. The parameter count is exact: every layer is built as
calibrate builds it, on torch's meta device, which allocates nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch

from embsim.errors import InputError

from .modules import build_layer
from .spec import ModelShape
from .strategies import STRATEGIES

COPIES_PER_STRATEGY = 3      # parameters, gradients, DDP buckets
SAMPLER_COPIES = 2           # parameters, gradients
PEAK_COPIES = COPIES_PER_STRATEGY * len(STRATEGIES) + SAMPLER_COPIES
FP32_BYTES = 4
GIB = 1 << 30


def parameter_count(model: ModelShape) -> int:
    """Parameters of every layer calibrate builds (measure_layers builds each one)."""
    total = 0
    with torch.device("meta"):
        for layer in model.layers:
            total += sum(p.numel() for p in build_layer(layer, model).parameters())
    return total


def rank_bytes(model: ModelShape) -> int:
    """The estimated peak of one rank (see the module docstring)."""
    return PEAK_COPIES * FP32_BYTES * parameter_count(model)


def host_available_bytes() -> int | None:
    """MemAvailable from /proc/meminfo (what Linux can hand out without swapping), or None."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


@dataclass(frozen=True)
class MemoryCheck:
    parameters: int      # the model's, counted once
    ranks: int           # ranks whose peaks share this memory (the local ranks on a host, 1 on a GPU)
    available: int       # bytes
    where: str           # "host memory" or "GPU 0 memory"

    @property
    def needed(self) -> int:
        return self.ranks * PEAK_COPIES * FP32_BYTES * self.parameters

    @property
    def fits(self) -> bool:
        return self.needed <= self.available


def check_memory(model: ModelShape, ranks_sharing: int, backend: str) -> MemoryCheck | None:
    """The check for this run (None when the free memory cannot be read). On CPU (gloo) the
    local ranks share the host's memory; on GPUs (nccl) each rank has its own device."""
    if backend == "nccl" and torch.cuda.is_available():
        free, _ = torch.cuda.mem_get_info(0)
        return MemoryCheck(parameter_count(model), 1, int(free), "GPU 0 memory")
    available = host_available_bytes()
    if available is None:
        return None
    return MemoryCheck(parameter_count(model), ranks_sharing, available, "host memory")


def require_fit(model: ModelShape, ranks_sharing: int, backend: str) -> None:
    """Refuse, before any rank starts, a calibration that cannot fit."""
    check = check_memory(model, ranks_sharing, backend)
    if check is None or check.fits:
        return
    shared = f" x {check.ranks} ranks" if check.ranks > 1 else ""
    tables = sum(t.vocab * t.dim for t in model.tables.values())
    # the tables are most of it: --max-rows builds them smaller
    rows = _rows_that_fit(model, check) if tables > check.parameters / 2 else None
    raise InputError(
        f"{model.flag}: calibrating it needs about {check.needed / GIB:.1f} GiB "
        f"({check.parameters:,} parameters x {PEAK_COPIES} FP32 copies{shared}: {len(STRATEGIES)} strategies' "
        f"models with gradients and DDP buckets, and the in-step model), more than the "
        f"{check.available / GIB:.1f} GiB of {check.where} available; calibrate a smaller model"
        f"{' or fewer ranks (--world)' if shared else ''}"
        + (f", or cut its tables with --max-rows {rows}" if rows else ""))


def _rows_that_fit(model: ModelShape, check: MemoryCheck) -> int | None:
    """A --max-rows (two significant figures) whose capped model fits in half the memory
    (the check counts no activations, sweeps or allocator slack), or None."""
    per_param = check.needed / check.parameters
    dense = check.parameters - sum(t.vocab * t.dim for t in model.tables.values())
    room = check.available / 2 / per_param - dense      # parameters the tables may hold
    widest = sorted(model.tables.values(), key=lambda t: -t.vocab)
    for cap in sorted({t.vocab for t in widest}, reverse=True) + [0]:
        # rows r at or above `cap`: the tables longer than r hold r rows each
        over = [t for t in widest if t.vocab > cap]
        under = sum(t.vocab * t.dim for t in widest if t.vocab <= cap)
        width = sum(t.dim for t in over)
        if width and (room - under) / width >= max(cap, 1):
            rows = int((room - under) / width)
            digits = max(0, len(str(rows)) - 2)
            rows = rows // 10 ** digits * 10 ** digits
            return rows if rows >= 1 else None
    return None

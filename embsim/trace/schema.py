"""The calibration trace as data: what `embsim calibrate` measured on one machine.

Shared by both sides: embsim.calibrate builds these dataclasses and writes them, the
simulator loads them. No torch here (the simulator must not need it). All times are
seconds and all sizes bytes inside; the YAML stores microseconds (see trace/io.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..curves import interp_loglog

SCHEMA_VERSION = 1
TRACE_KIND = "embsim-trace"


@dataclass(frozen=True)
class Provenance:
    """Where and how a trace was captured, so a reader can judge what it describes."""

    host: str
    date: str                      # ISO 8601, UTC
    command: str                   # the command line that produced the trace
    world: int                     # ranks that took part
    backend: str                   # "gloo" | "nccl"
    backend_version: str           # NCCL version, or gloo's (= torch's) for CPU
    torch: str
    python: str
    devices: tuple[str, ...]       # one name per local device ("cpu: <model>" on CPU)
    driver: str | None = None      # NVIDIA driver, None on CPU
    cuda: str | None = None        # CUDA runtime torch was built with, None on CPU
    label: str = ""                # e.g. "CPU" -- how the trace should be described
    loadavg: tuple[float, ...] = ()  # os.getloadavg() at start, machine was shared
    threads_per_rank: int = 1
    nodes: int = 1


@dataclass(frozen=True)
class LayerPoint:
    """One layer's forward and backward time at one batch size."""

    batch: int
    fwd_s: float                   # median
    bwd_s: float                   # median
    fwd_spread_s: float            # inter-quartile range of the samples
    bwd_spread_s: float
    reps: int


@dataclass(frozen=True)
class LayerTiming:
    name: str
    kind: str                      # the zoo's layer kind (embedding, encoder, lstm, ...)
    variant: str                   # e.g. "dense-grad" / "sparse-grad" for embeddings, else ""
    points: tuple[LayerPoint, ...]  # sorted by batch
    timed: str = "isolated"        # "isolated": the layer alone; "in-step": inside whole steps


@dataclass(frozen=True)
class OptimizerTiming:
    """An optimizer step: over all dense parameters, or over the sparse rows touched."""

    name: str                      # "dense" | "sparse-rows"
    optimizer: str                 # e.g. "sgd"
    batch: int
    elements: int                  # parameters (dense) or rows x dim (sparse) updated
    median_s: float
    spread_s: float
    reps: int


@dataclass(frozen=True)
class CollectiveCurve:
    """An nccl-tests-style sweep of one op over one group of ranks."""

    op: str                        # all_reduce | all_gather | reduce_scatter | alltoall | broadcast
    ranks: int
    scope: str                     # "all" | "intra-node" | "inter-node"
    sizes: tuple[int, ...]         # bytes, nccl-tests "size" convention
    median_s: tuple[float, ...]
    spread_s: tuple[float, ...]

    def time_at(self, nbytes: float) -> float:
        """Measured time at a size, log-log interpolated between measured sizes and
        extrapolated linearly in bytes beyond the ends (bandwidth-bound regime)."""
        return interp_loglog(self.sizes, self.median_s, nbytes)


@dataclass(frozen=True)
class StepSamples:
    """Whole real training steps of one synchronisation strategy: validation ground truth."""

    strategy: str                  # allreduce | allgather | embrace
    world: int
    batch: int                     # per rank
    seq: int
    samples_s: tuple[float, ...]
    median_s: float
    # How the stepped model was built: calibrate gives a tied output projection its own
    # weight (modules.LanguageModel), so the table's gradient is the lookups' sparse one.
    untied_outputs: bool = False


# r = 1 means compute and communication serialise: f = r / (1 - r) diverges, so r is
# clipped here (compute at 1 % of its speed while a collective runs).
MAX_OVERLAP_COST = 0.99


@dataclass(frozen=True)
class InterferenceMeasurement:
    """Compute and a collective started together on the same ranks (gloo's threads share
    the cores; NCCL's kernels share the SMs): `layer` forward+backward alone (alone_s),
    one `collective` of `nbytes` alone (comm_s), and both at once until both are done
    (both_s). The engine slows compute to 1/(1+f) while a collective is in flight, which
    makes a collective shorter than the compute cost r = f/(1+f) of its duration;
    r = (both - alone) / comm measured gives f = r / (1 - r)."""

    layer: str
    batch: int
    collective: str
    nbytes: int
    alone_s: float                 # medians
    comm_s: float
    both_s: float
    reps: int
    # the collective's own duration when started with the compute (slowed by it)
    comm_overlapped_s: float | None = None

    @property
    def overlap_cost(self) -> float:
        """r: extra time per second of collective when it overlaps compute (0 .. 1)."""
        if self.comm_s <= 0:
            return 0.0
        return min(MAX_OVERLAP_COST, max(0.0, (self.both_s - self.alone_s) / self.comm_s))

    @property
    def factor(self) -> float:
        """Compute slowdown f when the collective is taken as unslowed (one-sided model,
        for measurements without comm_overlapped_s)."""
        r = self.overlap_cost
        return r / (1.0 - r)

    @property
    def comm_factor(self) -> float:
        """g: the collective runs 1/(1+g) as fast while compute runs (its duration beside
        the compute over its duration alone, minus one); 0 when not measured."""
        if not self.comm_overlapped_s or self.comm_s <= 0:
            return 0.0
        return max(0.0, self.comm_overlapped_s / self.comm_s - 1.0)

    @property
    def compute_factor(self) -> float:
        """f: compute runs 1/(1+f) as fast while a collective is in flight. With the
        collective's overlapped duration t_c measured, the compute done during the overlap
        is alone - (both - t_c), so its rate there is a = (alone - both + t_c) / t_c and
        f = 1/a - 1 (two-sided: the resource is shared, both sides slow down)."""
        if self.comm_factor == 0.0:
            return self.factor
        t_c = self.comm_overlapped_s
        if t_c >= self.both_s:
            rate = self.alone_s / self.both_s    # compute overlapped from start to end
        else:
            rate = (self.alone_s - self.both_s + t_c) / t_c
        rate = min(1.0, max(1.0 - MAX_OVERLAP_COST, rate))
        return 1.0 / rate - 1.0


@dataclass(frozen=True)
class RankSkew:
    """Communication-free steps run on every rank at once: rank 0's median step and the
    median of the slowest rank's, step by step. A synchronous step waits for the slowest
    rank, and the per-layer timings are rank 0's: factor = slowest / rank 0."""

    batch: int
    rank0_s: float
    slowest_s: float
    reps: int

    @property
    def factor(self) -> float:
        return max(1.0, self.slowest_s / self.rank0_s) if self.rank0_s > 0 else 1.0


@dataclass(frozen=True)
class TokenStatsRecord:
    """Rows touched by the batches actually fed (embedding-gradient sparsity)."""

    table: str
    vocab: int
    batch: int                     # per rank
    seq: int
    ranks: int
    source: str                    # "zipf(s=1.05, seed=0)" or "corpus:<file>"
    unique_per_rank: tuple[int, ...]
    union: int


@dataclass(frozen=True)
class Trace:
    schema_version: int
    device: str                    # "cpu" or the GPU name
    model: str
    seq: int
    topology: str                  # topology file name describing the calibrated host
    provenance: Provenance
    layers: dict[str, LayerTiming]
    optimizer: tuple[OptimizerTiming, ...]
    collectives: tuple[CollectiveCurve, ...]
    steps: dict[str, StepSamples]
    token_stats: tuple[TokenStatsRecord, ...]
    interference: InterferenceMeasurement | None = None
    rank_skew: RankSkew | None = None
    compute: Any = None            # embsim.trace.compute.ComputeMeasurement, if measured
    # the measured machine as a topology document (topologies/*.yaml dialect), embedded so
    # that the trace never depends on a file a later calibration rewrites; None: named only
    host_topology: dict | None = field(default=None, compare=False)
    # sha256 of the model file the layers were timed from (a --model path; "" for a zoo
    # model): the trace names the file, which may change after the calibration
    model_sha256: str = ""
    # calibrate --max-rows: every table larger was built with this many rows (its lookups
    # then read those rows); None: the model's own tables
    table_rows_cap: int | None = None
    source: str = field(default="", compare=False)   # file it was loaded from

    @property
    def batches(self) -> tuple[int, ...]:
        """Batch sizes at which layers were measured."""
        seen = sorted({p.batch for lt in self.layers.values() for p in lt.points})
        return tuple(seen)

    def interp(self, layer: str, batch: float) -> tuple[float, float]:
        """(forward, backward) seconds of `layer` at `batch`, linear in batch between the
        measured sizes and extrapolated along the end segments (clamped at zero)."""
        try:
            points = self.layers[layer].points
        except KeyError:
            raise KeyError(f"trace {self.source or ''} has no layer {layer!r}") from None
        batches = np.array([p.batch for p in points], dtype=float)
        out = []
        for attr in ("fwd_s", "bwd_s"):
            values = np.array([getattr(p, attr) for p in points], dtype=float)
            out.append(_linear(batches, values, float(batch)))
        return out[0], out[1]

    def collective(self, op: str, ranks: int, scope: str = "all") -> CollectiveCurve | None:
        for curve in self.collectives:
            if curve.op == op and curve.ranks == ranks and curve.scope == scope:
                return curve
        return None


def _linear(xs: np.ndarray, ys: np.ndarray, x: float) -> float:
    if len(xs) == 1:
        # One size measured: proportional scaling is the only defensible guess.
        return float(ys[0] * x / xs[0])
    if x <= xs[0]:
        i = 0
    elif x >= xs[-1]:
        i = len(xs) - 2
    else:
        return float(np.interp(x, xs, ys))
    slope = (ys[i + 1] - ys[i]) / (xs[i + 1] - xs[i])
    return float(max(0.0, ys[i] + slope * (x - xs[i])))

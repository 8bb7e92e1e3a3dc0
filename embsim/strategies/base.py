"""What a synchronisation strategy is: given the step's context, which state must be
communicated (SyncTensors), how long the optimizer takes on each layer under it, what
extra compute it adds, and how much memory it needs per GPU."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..engine.ops import ComputeOp, SyncTensor
from ..registry import Registry
from ..workload.memory import MemoryBreakdown


@dataclass(frozen=True)
class TableTraffic:
    """Token statistics of one embedding table for one step (expected values)."""

    table: str
    layer: str                 # the embedding layer that owns the table
    vocab: int
    dim: int
    lookups_per_gpu: float     # tokens looked up by one GPU's batch
    unique_per_gpu: float      # distinct rows touched by one GPU's batch
    unique_union: float        # distinct rows touched by all GPUs' batches together
    unique_next_overlap: float  # rows of this step's union that the next step's union touches again
    lookup_fraction_next: float  # fraction of this step's lookups whose row the next step reads
    dense_grad: bool           # some layer (a full softmax tied to it) makes its gradient dense
    # probability of each row per lookup, in row-id order (row-wise sharding's skew)
    row_probs: Any = field(default=None, compare=False, repr=False)
    # probability that one GPU's step touches each row (a server's share of pushed rows)
    row_inclusion: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class StepContext:
    model: Any                     # embsim.workload.Model
    n_gpus: int
    gpus_per_node: int
    layer_fwd: Mapping[str, float]     # seconds
    layer_bwd: Mapping[str, float]
    layer_update: Mapping[str, float]  # dense optimizer step of the whole layer
    sparse_update: Callable[[str, float], float]  # (table owner layer, rows) -> optimizer seconds
    tables: Mapping[str, TableTraffic]    # by table owner layer name
    hbm_bytes: float
    gpu: Any = None                        # roofline ComputeSpec of the GPU (for extra kernels)

    def layer(self, name: str):
        return next(l for l in self.model.layers if l.name == name)


@dataclass(frozen=True)
class StrategyPlan:
    sync: tuple[SyncTensor, ...]
    update_time: Mapping[str, float]                  # layer -> optimizer seconds per step
    memory: MemoryBreakdown
    extra: tuple[tuple[str, ComputeOp], ...] = ()     # (insert before this stream op, op)
    notes: tuple[str, ...] = ()


class Strategy:
    """Base class; subclasses register themselves in STRATEGIES."""

    name = "?"
    description = ""

    def __init__(self, **options: Any):
        self.options = options

    def topology(self, topo):
        """The topology this strategy runs on: `topo`, or a copy with machines the
        strategy brings (parameter servers)."""
        return topo

    def plan(self, ctx: StepContext) -> StrategyPlan:  # pragma: no cover - interface
        raise NotImplementedError


STRATEGIES: Registry[Strategy] = Registry("strategy", "--strategy")

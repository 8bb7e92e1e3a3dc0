"""What strategies and schedulers see of one training step: the model, the GPUs, every
layer's compute and optimizer times, and the token statistics of each embedding table.
Built once per simulation (engine.context), read by every policy."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..workload.grad_compress import GradCompress


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
    # rows per entry of row_probs / row_inclusion: a large table's cold rows come in runs
    # (embsim.workload.row_groups); None: one row per entry
    row_counts: Any = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class StepContext:
    model: Any                     # embsim.workload.Model
    n_gpus: int
    gpus_per_node: int
    layer_fwd: Mapping[str, float]     # seconds
    layer_bwd: Mapping[str, float]
    layer_update: Mapping[str, float]  # dense optimizer step of the whole layer
    # (table owner layer, distinct rows[, lookups]) -> optimizer seconds
    sparse_update: Callable[..., float]
    tables: Mapping[str, TableTraffic]    # by table owner layer name
    hbm_bytes: float
    # seconds of a list of workload.kernels.Kernel on this GPU, from the kernel model that
    # times the layers (what a strategy's extra kernels cost)
    kernel_seconds: Any = None
    # 16-bit compression of the DDP gradient buckets' all-reduce (workload.grad_compress)
    grad_compress: GradCompress = GradCompress()
    # (table owner layer, gradient rows, distinct rows) -> seconds of the framework's merge
    # of a sparse gradient's repeated rows, with no update (a GPU coalescing before it sends)
    sparse_merge: Callable[..., float] | None = None

    def synced_seconds(self, parts) -> float:
        """Seconds of kernel lists the host runs one after another, waiting for the GPU to
        drain between them (a host sync ends each): their times add."""
        return sum(self.kernel_seconds(part) for part in parts)

    def layer(self, name: str):
        return next(l for l in self.model.layers if l.name == name)

"""The operations of one training iteration, as data.

A step is a list of compute operations that run in order on each GPU's compute stream
and communication operations that the scheduler issues onto NCCL channels. Compute ops
are identified by an OpId (role + layer), communication ops by their name; both are
unique within an iteration. Dependencies name other operations, optionally of the
previous iteration (offset -1), which is how "the next forward of layer i waits for
layer i's update" is expressed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from ..network import Demand
from ..workload.memory import MemoryBreakdown
from .names import OpId

# (compute OpId or comm op name, iteration offset: 0 = this iteration, -1 = previous)
Dep = tuple[OpId | str, int]


@dataclass(frozen=True)
class ComputeOp:
    id: OpId
    duration: float           # seconds on a nominal (non-straggling, uninterfered) GPU
    lagged: bool = False      # works on the previous iteration's gradients: skipped in iteration 0
    # a pass over parameter-sized tensors (the optimizer update, a DDP wrapper's bucket
    # passes): a rank's batch-length jitter does not stretch it (RankClass.param_slowdown)
    param_sized: bool = False

    @property
    def name(self) -> str:
        return self.id.text

    @property
    def kind(self) -> str:
        return self.id.role.value

    @property
    def layer(self) -> str:
        return self.id.layer


@dataclass(frozen=True)
class NodeCopy:
    """Copies inside the nodes that a transfer needs before or after it, off the compute
    stream (ps local aggregation: every GPU's rows into its node's host memory before a
    push, the pulled rows back after a pull): the longest route's latency (s) and the
    bytes every node link carries, which the network shares with the step's other traffic."""

    latency: float
    demand: Demand

    def scaled(self, factor: float) -> "NodeCopy":
        """The copies of `factor` of the bytes (one piece of a partitioned transfer)."""
        return NodeCopy(self.latency, self.demand.scaled(factor))


@dataclass(frozen=True)
class SyncTensor:
    """A piece of state that must be communicated, as the strategy sees it."""

    name: str
    layer: str
    op: str                   # NCCL op: all_reduce, all_gather, alltoall, ...
    nbytes: float             # collective size, nccl-tests convention for `op`
    category: str             # "dense" | "embedding"
    ready_after: OpId         # compute op (this iteration) after which it can be sent
    # The compute op that consumes it (activations, e.g. EmbRace's forward AlltoAll): its
    # next run after ready_after, in this iteration or, if it comes earlier in the stream,
    # the next one (a PS pull needed by the next forward). None for a gradient: then its
    # layer's update consumes it, when the scheduler's update policy says.
    needed_by: OpId | None = None
    update_of: OpId | None = None  # the update op that consumes it (default: update of `layer`)
    matrix: np.ndarray | None = field(default=None, compare=False)  # alltoallv byte matrix
    # copies inside the nodes its transfer needs first / afterwards (NodeCopy), on its own
    # stream; a piece of a partitioned tensor carries its share of the bytes
    copy_before: NodeCopy | None = field(default=None, compare=False)
    copy_after: NodeCopy | None = field(default=None, compare=False)

    def scaled(self, factor: float, parts: int = 1) -> "SyncTensor":
        """factor / parts of the tensor (a scheduler's piece of it): its bytes, its byte
        matrix and its node copies alike. `parts` divides rather than multiplying by
        1 / parts, so each of k equal pieces holds exactly nbytes / k."""
        share = factor / parts
        return replace(self, nbytes=self.nbytes * factor / parts,
                       matrix=None if self.matrix is None else self.matrix * factor / parts,
                       copy_before=None if self.copy_before is None else self.copy_before.scaled(share),
                       copy_after=None if self.copy_after is None else self.copy_after.scaled(share))


@dataclass(frozen=True)
class CommOp:
    """A collective as issued: one bucket or partition of one or more SyncTensors."""

    name: str
    op: str
    nbytes: float
    category: str
    channel: str              # ops on one channel obey the channel's concurrency rule
    ready_after: tuple[Dep, ...]
    priority: float           # lower is more urgent (used by priority schedulers)
    tensors: tuple[str, ...]  # SyncTensor names it (partly) carries
    matrix: np.ndarray | None = field(default=None, compare=False)
    # seconds of memory-bound kernels its stream runs after the transfer, before anything
    # waiting for it may go on (apex DDP's post-all-reduce divide and unflatten copy)
    tail: float = 0.0
    # copies inside the nodes before / after the transfer, on the same stream (NodeCopy)
    copy_before: NodeCopy | None = field(default=None, compare=False)
    copy_after: NodeCopy | None = field(default=None, compare=False)
    # the rank groups it runs over: "" the data-parallel ones (every rank without tensor
    # parallelism), "tp" the tensor-parallel groups (engine.tp_plan); pipeline parallelism
    # names one stage's groups or one stage pair's (engine.pp_plan)
    group: str = ""
    # the ranks that take part (its communicator); empty: every rank (engine.pp_plan gives
    # a stage's collectives its ranks and a stage-to-stage transfer both stages')
    ranks: tuple[int, ...] = ()


def channel_family(channel: str) -> str:
    """A channel's kind without the pipeline stage that owns it: engine.pp_run gives every
    stage its own channels ("tp@s3" is stage 3's TP communicator), since each stage's
    collectives run on its own GPUs' NCCL communicators, beside the other stages'."""
    return channel.split("@", 1)[0]


@dataclass(frozen=True)
class StepPlan:
    """Everything the engine needs for one iteration; identical for every iteration."""

    stream: tuple[ComputeOp, ...]         # compute stream order of one iteration
    comms: tuple[CommOp, ...]
    # compute op -> comm ops it must wait for (with iteration offsets)
    comm_waits: dict[OpId, tuple[Dep, ...]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()           # the strategy's and the scheduler's remarks
    # a rank class's own compute stream, by class name (pipeline parallelism: each stage's
    # 1F1B program, engine.pp_plan); a class not named runs `stream`
    streams: Mapping[str, tuple[ComputeOp, ...]] = field(default_factory=dict)
    # what the data-parallel wrapper keeps for its gradient buckets beside the gradients
    # (a schedulers.ddp_passes.BucketMemory: PyTorch DDP's flat buckets), None: nothing
    bucket_memory: object = None


@dataclass(frozen=True)
class StrategyPlan:
    """What a strategy hands over: the state to communicate, optimizer seconds per step
    (by layer; `deferred_update_time` for the part of a layer's update a scheduler
    moved past the next forward), memory per GPU and extra compute."""

    sync: tuple[SyncTensor, ...]
    update_time: Mapping[str, float]                  # layer -> optimizer seconds per step
    memory: MemoryBreakdown
    extra: tuple[tuple[OpId, ComputeOp], ...] = ()    # (insert before this stream op, op)
    notes: tuple[str, ...] = ()
    deferred_update_time: Mapping[str, float] = field(default_factory=dict)
    # transfers between a GPU and its own host that one GPU alone still runs (tables in host
    # memory: the lookup's copy in, the gradient's copy out and the CPU update); also in `sync`.
    # Their layers' update_time stands on one GPU too.
    host_sync: tuple[SyncTensor, ...] = ()
    host_notes: tuple[str, ...] = ()     # the notes about them (also in `notes`)
    # other layers whose update_time stands on one GPU too (a table the strategy keeps
    # dense whatever the GPU count: OpenEmbedding's Cache Local tables)
    one_gpu_updates: tuple[str, ...] = ()
    # layer -> (forward, backward) factor on its own compute time, where the strategy changes
    # how much of the layer's work a GPU does (an owner that receives each sender's distinct
    # rows only looks up and scatters those, not one row per lookup)
    layer_time_scale: Mapping[str, tuple[float, float]] = field(default_factory=dict)

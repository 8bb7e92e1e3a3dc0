"""What a communication scheduler is: it turns the strategy's SyncTensors into the
collectives actually issued (buckets, partitions), gives each a priority and a channel,
says how many may be in flight per channel, and when optimizer updates may run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..options import Configurable
from ..plan.ops import CommOp, StrategyPlan, SyncTensor
from ..registry import Registry


@dataclass(frozen=True)
class ChannelRule:
    """At most one op in flight (credit None), or as many as fit in `credit` bytes
    (always at least one). `serial`: the credit bounds the collectives posted to the
    channel's one NCCL stream, which runs them one after another in posting order
    (ByteScheduler's credit on an AllReduce backend); parameter-server transfers overlap."""

    credit: float | None = None
    serial: bool = False


class Scheduler(Configurable):
    name = "?"
    description = ""
    # True: each layer's optimizer update runs as soon as its gradients are synchronised,
    # interleaved with the next forward (P3 / ByteScheduler). False: PyTorch DDP, where
    # optimizer.step() waits for every gradient of the iteration.
    per_layer_update = False
    component_kind = "scheduler"   # --option keys: an Options dataclass (embsim.options)

    def build(self, tensors: Sequence[SyncTensor], ctx) -> tuple[CommOp, ...]:  # pragma: no cover
        raise NotImplementedError

    def transform(self, strategy_plan: StrategyPlan, ctx, strategy) -> StrategyPlan:
        """Rewrite the strategy's plan before bucketing (e.g. split tensors into the part
        the next iteration needs and the part that may wait), reading the strategy's
        declared traits. Default: unchanged."""
        return strategy_plan

    def rewrite_stream(self, stream, ctx):
        """The compute stream of one iteration, reordered or split. Default: unchanged."""
        return stream

    def gradient_passes(self, comms, tensors, ctx):
        """The data-parallel wrapper's own passes over the gradient buckets among `comms`
        (a schedulers.ddp_passes.GradientPasses), or None. Default: none."""
        return None

    def bucket_memory(self, comms, tensors, ctx, passes=None):
        """What the data-parallel wrapper keeps for its gradient buckets beside the
        gradients (a schedulers.ddp_passes.BucketMemory), or None. Default: none."""
        return None

    def queue_key(self, op: CommOp, iteration: int = 0) -> tuple:
        """Where a ready collective of `iteration` goes in its channel's queue, before the
        runtime's own order (iteration, ready time, issue order). Default: ready order
        (FIFO). A scheduler that keys ops on their consumer's position across iterations
        folds the iteration into the key (embrace-2d)."""
        return ()

    def channel_rule(self, channel: str) -> ChannelRule:
        return ChannelRule()

    def check(self, strategy) -> None:
        """Raise InputError for a strategy this scheduler cannot sensibly drive, from the
        strategy's declared traits."""


SCHEDULERS: Registry[Scheduler] = Registry("scheduler", "--scheduler")


def single_op(t: SyncTensor, priority: float, channel: str | None = None) -> CommOp:
    """A SyncTensor issued whole as one collective."""
    return CommOp(name=t.name, op=t.op, nbytes=t.nbytes, category=t.category,
                  channel=channel or t.category, ready_after=((t.ready_after, 0),),
                  priority=priority, tensors=(t.name,), matrix=t.matrix, copy_before=t.copy_before,
                  copy_after=t.copy_after)

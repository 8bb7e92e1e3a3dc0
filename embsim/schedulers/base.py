"""What a communication scheduler is: it turns the strategy's SyncTensors into the
collectives actually issued (buckets, partitions), gives each a priority and a channel,
says how many may be in flight per channel, and when optimizer updates may run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..plan.ops import CommOp, SyncTensor
from ..registry import Registry


@dataclass(frozen=True)
class ChannelRule:
    """At most one op in flight (credit None), or as many as fit in `credit` bytes
    (always at least one)."""

    credit: float | None = None


class Scheduler:
    name = "?"
    description = ""
    # True: each layer's optimizer update runs as soon as its gradients are synchronised,
    # interleaved with the next forward (P3 / ByteScheduler). False: PyTorch DDP, where
    # optimizer.step() waits for every gradient of the iteration.
    per_layer_update = False
    # "ready": ready order (FIFO); "priority": lowest CommOp.priority first
    order = "ready"

    def __init__(self, **options):
        self.options = options

    def build(self, tensors: Sequence[SyncTensor], ctx) -> tuple[CommOp, ...]:  # pragma: no cover
        raise NotImplementedError

    def transform(self, strategy_plan, ctx):
        """Rewrite the strategy's plan before bucketing (e.g. split tensors into the part
        the next iteration needs and the part that may wait). Default: unchanged."""
        return strategy_plan

    def channel_rule(self, channel: str) -> ChannelRule:
        return ChannelRule()

    def check(self, strategy) -> None:
        """Raise InputError for a strategy this scheduler cannot sensibly drive."""


SCHEDULERS: Registry[Scheduler] = Registry("scheduler", "--scheduler")


def single_op(t: SyncTensor, priority: float, channel: str | None = None) -> CommOp:
    """A SyncTensor issued whole as one collective."""
    return CommOp(name=t.name, op=t.op, nbytes=t.nbytes, category=t.category,
                  channel=channel or t.category, ready_after=((t.ready_after, 0),),
                  priority=priority, tensors=(t.name,), matrix=t.matrix)

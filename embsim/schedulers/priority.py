"""priority: P3 / ByteScheduler. Every tensor is cut into partitions; one priority queue
over all of them (one NCCL channel), lower layer index first, since the next forward
needs the input side first; as many partitions in flight as fit in a byte credit.
Preemption happens at partition boundaries: when credit frees, the most urgent ready
partition goes next, so a newly ready input-side tensor overtakes the remaining
partitions of an output-side one. Optimizer updates run per layer, interleaved with the
next forward (the next forward of layer i waits only for layer i's partitions).

Defaults (docs/sources/workloads.md): ByteScheduler's values suggested for an AllReduce
backend, which NCCL is — partitions of 8,000,000 parameters = 32 MB in fp32 and a credit
of 16,000,000 parameters = 64 MB. (Its parameter-server defaults, 1M and 4M parameters,
are `--option partition_bytes=4e6 --option credit_bytes=16e6`: on NCCL each 4 MB piece
pays a collective's latency and runs far below peak bandwidth.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..errors import InputError
from ..plan.names import update_name
from ..plan.ops import CommOp
from ..options import positive_number
from .base import SCHEDULERS, ChannelRule, Scheduler, single_op

FP32 = 4
MIN_PARTITION_BYTES = 64 * 1024
CHANNEL = "nccl"   # one queue: the scheduler, not separate streams, decides the order


def partitions(t, partition_bytes: float, channel: str, priority: float, n_gpus: int) -> list[CommOp]:
    """A gradient cut into equal pieces of at most partition_bytes of each GPU's tensor
    (an all_gather's size counts every GPU's part, so it is divided by N first).
    Activations a compute op blocks on go whole: the stream waits for all of it anyway,
    and every extra collective pays NCCL's latency again."""
    own = t.nbytes / n_gpus if t.op == "all_gather" else t.nbytes
    k = 1 if t.needed_by is not None else max(1, math.ceil(own / partition_bytes))
    piece = single_op(t.scaled(1.0, parts=k), priority, channel)
    return [piece if k == 1 else replace(piece, name=f"{t.name}#p{i}") for i in range(k)]


@dataclass(frozen=True)
class PriorityOptions:
    partition_bytes: float = 8_000_000 * FP32    # largest piece of one GPU's tensor
    credit_bytes: float = 16_000_000 * FP32      # bytes in flight on the channel

    def __post_init__(self):
        check_partition_sizes(self)


def check_partition_sizes(options) -> None:
    """Partition and credit sizes of a partitioning scheduler's options, checked in place
    (priority, embrace-2d): below 64 KiB a gradient would be cut into millions of
    collectives, a run of minutes and gigabytes, so such sizes are refused up front."""
    for key in ("partition_bytes", "credit_bytes"):
        object.__setattr__(options, key, positive_number(getattr(options, key), key,
                                                         minimum=MIN_PARTITION_BYTES))


@SCHEDULERS.register("priority")
class PriorityScheduler(Scheduler):
    description = "P3/ByteScheduler: partitions, input-side-first priority queue, credit, per-layer updates"
    per_layer_update = True

    Options = PriorityOptions

    def priority_of(self, t, ctx) -> float:
        """P3's rule: the forward index of the layer the tensor feeds. Activations some
        compute op blocks on go first (-1)."""
        if t.needed_by is not None:
            return -1.0
        layers = [l.name for l in ctx.model.layers]
        target = t.update_of or update_name(t.layer)
        return float(layers.index(target.layer) + (len(layers) if target.deferred else 0))

    def build(self, tensors, ctx):
        ops: list[CommOp] = []
        for t in tensors:
            ops += partitions(t, self.options.partition_bytes, CHANNEL, self.priority_of(t, ctx), ctx.n_gpus)
        return tuple(ops)

    def check(self, strategy) -> None:
        # P3's per-layer updates run inside the next forward, after that forward's
        # parameter gathers were issued: FSDP would gather parameters one update stale
        if strategy.gathers_updated_parameters:
            raise InputError(f"--scheduler priority with --strategy {strategy.name}: its forward "
                             f"all-gathers parameters after one optimizer step, which per-layer "
                             f"updates inside the next forward would leave one update stale; "
                             f"use fifo")

    def queue_key(self, op, iteration=0):
        return (op.priority,)

    def channel_rule(self, channel):
        # the credit bounds what is posted to NCCL; the stream runs it in order
        return ChannelRule(credit=self.options.credit_bytes, serial=True)

"""FIFO: PyTorch DDP. Gradients AllReduced in backward order as 25 MB buckets fill
(the first bucket is 1 MB, as in DDP, so communication starts early); one NCCL stream,
so one collective at a time; optimizer.step() after every gradient is reduced."""

from __future__ import annotations

from dataclasses import dataclass

from ..options import positive_number
from .base import SCHEDULERS, Scheduler, single_op
from ..plan.ops import CommOp

MiB = 1024 * 1024


@dataclass(frozen=True)
class FifoOptions:
    bucket_bytes: float = 25 * MiB        # DDP's bucket_cap_mb
    first_bucket_bytes: float = 1 * MiB   # DDP's first bucket, so communication starts early

    def __post_init__(self):
        for key in ("bucket_bytes", "first_bucket_bytes"):
            positive_number(getattr(self, key), key)


@SCHEDULERS.register("fifo")
class FifoScheduler(Scheduler):
    description = "backward order, DDP 25 MB buckets, one collective at a time"
    per_layer_update = False

    Options = FifoOptions

    def build(self, tensors, ctx):
        ops: list[CommOp] = []
        bucket: list = []
        cap = self.options.first_bucket_bytes
        buckets = 0

        def flush():
            nonlocal bucket, cap, buckets
            if bucket:
                size = sum(t.nbytes for t in bucket)
                ops.append(CommOp(
                    name=f"bucket{buckets}",
                    op="all_reduce", nbytes=size, category="dense", channel="dense",
                    ready_after=tuple((t.ready_after, 0) for t in bucket),
                    priority=float(len(ops)), tensors=tuple(t.name for t in bucket)))
                bucket = []
                buckets += 1
                cap = self.options.bucket_bytes

        for t in tensors:
            if t.op == "all_reduce" and t.category == "dense" and t.needed_by is None:
                bucket.append(t)
                if sum(x.nbytes for x in bucket) >= cap:
                    flush()
            else:
                ops.append(single_op(t, priority=float(len(ops))))
        flush()
        return tuple(ops)

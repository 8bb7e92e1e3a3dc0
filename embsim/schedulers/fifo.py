"""FIFO: PyTorch DDP. Gradients AllReduced in backward order as 25 MB buckets fill
(the first bucket is 1 MB, as in DDP, so communication starts early); one NCCL stream,
so one collective at a time; optimizer.step() after every gradient is reduced. On more
than one GPU the wrapper's own passes over the gradient (bucket copies, the divide by the
world size) run as the `ddp` style says (schedulers.ddp_passes)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..options import positive_number
from .base import SCHEDULERS, Scheduler, single_op
from .ddp_passes import DDP_STYLES, gradient_passes
from ..plan.ops import CommOp

MiB = 1024 * 1024


@dataclass(frozen=True)
class FifoOptions:
    bucket_bytes: float = 25 * MiB        # DDP's bucket_cap_mb
    first_bucket_bytes: float = 1 * MiB   # DDP's first bucket, so communication starts early
    # the wrapper whose gradient passes run (ddp_passes): torch DDP as constructed by default
    ddp: str = "torch"
    # torch-view only: in-place divides a registered comm hook runs on each full bucket
    # (allreduce_hook's by the world size, a wrapper's by the accumulation steps); 0 = no
    # hook, the reducer divides each gradient itself
    hook_divides: int = 0

    def __post_init__(self):
        for key in ("bucket_bytes", "first_bucket_bytes"):
            positive_number(getattr(self, key), key)
        if self.ddp not in DDP_STYLES:
            raise InputError(f"--option ddp={self.ddp!r}: must be one of {', '.join(DDP_STYLES)}")
        if (isinstance(self.hook_divides, bool) or not isinstance(self.hook_divides, int)
                or not 0 <= self.hook_divides <= 8):
            raise InputError(f"--option hook_divides={self.hook_divides!r}: must be an integer 0..8")
        if self.hook_divides and self.ddp != "torch-view":
            raise InputError("--option hook_divides: only with ddp=torch-view "
                             "(gradient_as_bucket_view with a comm hook)")


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

    def gradient_passes(self, comms, tensors, ctx):
        return gradient_passes(comms, tensors, ctx, self.options.ddp, self.options.hook_divides)

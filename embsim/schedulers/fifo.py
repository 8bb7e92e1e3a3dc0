"""FIFO: PyTorch DDP. Gradients AllReduced in backward order as 25 MB buckets fill
(the first bucket is 1 MB, as in DDP, so communication starts early); one NCCL stream,
so one collective at a time -- the strategy's own collectives (an embedding AlltoAll or
AllGather) included, issued on the same process group's stream as the buckets (PyTorch's
ProcessGroupNCCL runs a group's collectives on one stream per device); a parameter
server's pushes and pulls are its own connections and run beside them; optimizer.step()
after every gradient is reduced. On more
than one GPU the wrapper's own passes over the gradient (bucket copies, the divide by the
world size) run as the `ddp` style says, and its buckets take the memory that style keeps
for them (schedulers.ddp_passes).

With ``ddp=apex`` the buckets are apex DistributedDataParallel's instead
(apex/parallel/distributed.py at 43a6f9f, allreduce_hook lines 358-390 and
sync_bucket_structure lines 283-287): the first backward records the order gradients
arrive in and closes a bucket as soon as it holds ``message_size`` elements (default
10,000,000), with no small first bucket and one running bucket per element type (half,
float, double, in that order for the leftovers appended after the backward); later
iterations reuse that structure and all-reduce the buckets in index order
(comm_ready_buckets)."""

from __future__ import annotations

from dataclasses import dataclass

from ..collectives.servers import SERVER_OPS
from ..errors import InputError
from ..options import positive_number
from .base import SCHEDULERS, Scheduler, single_op
from .ddp_passes import DDP_STYLES, bucket_memory, gradient_passes
from ..plan.ops import CommOp

MiB = 1024 * 1024
STREAM = "nccl"     # the process group's one NCCL stream: every collective, in issue order


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
    # ddp=apex only: apex DDP's message_size, elements per bucket (its constructor default)
    message_size: float = 10_000_000

    def __post_init__(self):
        for key in ("bucket_bytes", "first_bucket_bytes", "message_size"):
            positive_number(getattr(self, key), key)
        if self.ddp not in DDP_STYLES:
            raise InputError(f"--option ddp={self.ddp!r}: must be one of {', '.join(DDP_STYLES)}")
        if (isinstance(self.hook_divides, bool) or not isinstance(self.hook_divides, int)
                or not 0 <= self.hook_divides <= 8):
            raise InputError(f"--option hook_divides={self.hook_divides!r}: must be an integer 0..8")
        if self.hook_divides and self.ddp != "torch-view":
            raise InputError("--option hook_divides: only with ddp=torch-view "
                             "(gradient_as_bucket_view with a comm hook)")
        if self.ddp == "apex" and (self.bucket_bytes != 25 * MiB or self.first_bucket_bytes != 1 * MiB):
            raise InputError("--option bucket_bytes/first_bucket_bytes: not with ddp=apex, whose "
                             "buckets close at message_size elements (set --option message_size)")
        if self.ddp != "apex" and self.message_size != 10_000_000:
            raise InputError("--option message_size: only with ddp=apex (torch DDP buckets by "
                             "bucket_bytes)")


@SCHEDULERS.register("fifo")
class FifoScheduler(Scheduler):
    description = "backward order, DDP 25 MB buckets, one collective at a time"
    per_layer_update = False

    Options = FifoOptions

    def build(self, tensors, ctx):
        if self.options.ddp == "apex":
            return self._apex_buckets(tensors, ctx)
        ops: list[CommOp] = []
        bucket: list = []
        size, buckets = 0.0, 0
        cap = self.options.first_bucket_bytes
        for t in tensors:
            if _bucketable(t):
                bucket.append(t)
                size += t.nbytes
                if size >= cap:
                    ops.append(_bucket_op(bucket, ops, buckets))
                    bucket, size, cap, buckets = [], 0.0, self.options.bucket_bytes, buckets + 1
            else:
                ops.append(_single(t, ops))
        if bucket:
            ops.append(_bucket_op(bucket, ops, buckets))
        return tuple(ops)

    def _apex_buckets(self, tensors, ctx):
        """apex DDP's buckets: per element type, closed at message_size elements in
        gradient arrival (backward) order; leftovers after the backward, half before
        float before double. One SyncTensor is one layer's gradient, so a bucket closes
        at the end of the layer that crosses message_size (apex: at that parameter)."""
        ops: list[CommOp] = []
        running: dict[int, list] = {}      # element bytes -> open bucket
        numel: dict[int, float] = {}
        buckets = 0
        for t in tensors:
            if _bucketable(t):
                elem = ctx.model.grad_elem_bytes(ctx.layer(t.layer))
                running.setdefault(elem, []).append(t)
                numel[elem] = numel.get(elem, 0.0) + t.nbytes / elem
                if numel[elem] >= self.options.message_size:
                    ops.append(_bucket_op(running.pop(elem), ops, buckets))
                    buckets += 1
                    numel[elem] = 0.0
            else:
                ops.append(_single(t, ops))
        for elem in sorted(running):       # half (2), float (4), double (8)
            if running[elem]:
                ops.append(_bucket_op(running[elem], ops, buckets))
                buckets += 1
        return tuple(ops)

    def gradient_passes(self, comms, tensors, ctx):
        return gradient_passes(comms, tensors, ctx, self.options.ddp, self.options.hook_divides)

    def bucket_memory(self, comms, tensors, ctx, passes=None):
        return bucket_memory(comms, tensors, ctx, self.options.ddp, passes)


def _bucketable(t) -> bool:
    """A dense gradient AllReduce nothing in this iteration waits on: DDP buckets it."""
    return t.op == "all_reduce" and t.category == "dense" and t.needed_by is None


def _single(t, ops: list) -> CommOp:
    """A tensor DDP does not bucket, issued whole on the stream (a server's transfer on
    its own connections)."""
    return single_op(t, priority=float(len(ops)), channel=None if t.op in SERVER_OPS else STREAM)


def _bucket_op(bucket: list, ops: list, index: int) -> CommOp:
    """Bucket `index`'s AllReduce, issued after everything already in `ops`."""
    return CommOp(name=f"bucket{index}", op="all_reduce", nbytes=sum(t.nbytes for t in bucket),
                  category="dense", channel=STREAM,
                  ready_after=tuple((t.ready_after, 0) for t in bucket),
                  priority=float(len(ops)), tensors=tuple(t.name for t in bucket))

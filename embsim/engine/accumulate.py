"""Gradient accumulation: K micro-batches per optimizer step.

Two ways frameworks synchronise the accumulated gradients (`sync`):
- "last" (torch DDP's no_sync, Horovod's backward_passes_per_step): the first K-1
  micro-batches run forward and backward with no communication; only the last one's
  backward overlaps the gradient synchronisation. The step is the single-micro-batch
  plan with (K-1) whole micro-batches of compute put in front of the first layer's forward.
- "every" (apex DistributedDataParallel, which has no no_sync: DeepLearningExamples'
  GNMT and Transformer trainers): every micro-batch's backward all-reduces the gradients
  accumulated so far, and each training iteration ends waiting for it. The step is K-1
  micro-batches without the optimizer, each with its own synchronisation, then one with
  it (combine_micro_batches).

apex amp O2 (GNMT's --math fp16) unscales every backward's 16-bit gradients into the FP32
master gradients (apex/amp/_process_optimizer.py, post_backward_with_master_weights), adding
them to those stashed from the micro-batches before (multi_tensor_axpby: read the 16-bit
gradient and the FP32 stash, write FP32): each micro-batch after the first pays that pass;
the optimizer step's own unscale (embsim.workload.compute) covers the first.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import InputError
from ..workload.kernels import stream
from .metrics import StepMetrics

SYNCS = ("last", "every")


def check_accumulate(k) -> int:
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise InputError(f"--accumulate {k!r}: must be an integer >= 1")
    return k


def check_sync(sync) -> str:
    if sync not in SYNCS:
        raise InputError(f"--accumulate-sync {sync!r}: must be one of {', '.join(SYNCS)}")
    return sync


def global_batch_micro_batches(global_batch: int | None, batch: int, replicas: int) -> int:
    """Micro-batches a step takes to reach a fixed global batch: global // (batch x
    replicas), at least one (a global batch smaller than one step's batches is not split;
    e.g. DeepLearningExamples GNMT's train.py set_iter_size); 1 without one."""
    return 1 if global_batch is None else max(1, global_batch // (batch * replicas))


def master_accumulate_s(ctx, amp: str) -> float:
    """Seconds of one later micro-batch's apex-O2 unscale into the stashed master gradients
    (0 unless amp o2 with FP32 master weights; amp megatron has no such pass: each
    weight-gradient GEMM accumulates into the FP32 main_grad itself, Megatron-Core's
    gradient_accumulation_fusion)."""
    m = ctx.model
    if amp != "o2" or not m.optimizer.master_bytes_per_param:
        return 0.0
    return ctx.kernel_seconds([stream("amp.unscale_with_stash", m.params * (m.dtype_bytes + 8))])


def accumulate(ctx, k: int, amp: str = "autocast"):
    """The StepContext of an optimizer step over k micro-batches (sync "last")."""
    if check_accumulate(k) == 1:
        return ctx
    earlier = (k - 1) * (sum(ctx.layer_fwd.values()) + sum(ctx.layer_bwd.values())
                         + master_accumulate_s(ctx, amp))
    first = ctx.model.layers[0].name
    fwd = dict(ctx.layer_fwd)
    fwd[first] = fwd[first] + earlier
    return replace(ctx, layer_fwd=fwd)


def without_update(splan, seconds: float = 0.0):
    """The strategy plan of a micro-batch that synchronises but does not step the optimizer;
    `seconds` of per-micro-batch gradient work (master_accumulate_s) spread over the layers'
    update slots by their share of them."""
    total = sum(splan.update_time.values())
    share = {k: (v / total if total > 0 else 1.0 / len(splan.update_time))
             for k, v in splan.update_time.items()}
    return replace(splan, update_time={k: seconds * share[k] for k in splan.update_time},
                   deferred_update_time={k: 0.0 for k in splan.deferred_update_time})


def combine_micro_batches(plain: StepMetrics, last: StepMetrics, k: int) -> StepMetrics:
    """Sync "every": k-1 micro-batches of `plain` (synchronised, no optimizer) then the
    `last` one (with the optimizer), back to back (each iteration ends in a host sync).
    Every per-step figure adds up the same way: the k-1 plain ones' plus the last one's."""
    def add(a: dict, b: dict) -> dict:
        return {key: (k - 1) * a.get(key, 0.0) + b.get(key, 0.0) for key in dict.fromkeys([*a, *b])}
    step = (k - 1) * plain.step_time + last.step_time
    util = {kind: tuple(((k - 1) * plain.step_time * p + last.step_time * q) / step
                        for p, q in zip(plain.link_utilisation.get(kind, (0.0, 0.0)),
                                        last.link_utilisation.get(kind, (0.0, 0.0))))
            for kind in dict.fromkeys([*plain.link_utilisation, *last.link_utilisation])}
    compute = (k - 1) * plain.compute + last.compute
    return StepMetrics(step_time=step, compute=compute, exposed_comm=max(0.0, step - compute),
                       comm_bytes_per_gpu=add(plain.comm_bytes_per_gpu, last.comm_bytes_per_gpu),
                       comm_time=add(plain.comm_time, last.comm_time),
                       link_utilisation=util, iterations_measured=last.iterations_measured,
                       comm_count=add(plain.comm_count, last.comm_count),
                       comm_wall=(k - 1) * plain.comm_wall + last.comm_wall,
                       exposed_by_op=add(plain.exposed_by_op, last.exposed_by_op),
                       comm_around=add(plain.comm_around, last.comm_around),
                       compute_stretch=(k - 1) * plain.compute_stretch + last.compute_stretch,
                       link_bytes=add(plain.link_bytes, last.link_bytes),
                       extra_by_tag=add(plain.extra_by_tag, last.extra_by_tag))

"""The memory passes a data-parallel wrapper runs over the gradient, on the GPU, only when
there is more than one GPU: copies into and out of the flat bucket the all-reduce reads,
and the divide by the world size. They move gradient bytes at copy bandwidth, so they
grow with the gradient exactly as the all-reduce does, and 1-GPU runs have none.

Styles (--option ddp=...):

- ``torch``: torch.nn.parallel.DistributedDataParallel as constructed by default
  (torch/csrc/distributed/c10d/reducer.cpp, PyTorch 2.x). Reducer::mark_variable_ready_dense
  runs in each parameter's autograd hook, on the compute stream: ``at::mul_out(bucket_view,
  grad, 1/div_factor_)`` copies the gradient into its bucket and divides in the same pass
  (one read, one write). Reducer::finalize_backward, after the backward, waits for each
  bucket's all-reduce and finalize_bucket_dense copies it back (``copy_bucket_to_grad``:
  ``grad.copy_(bucket_view)``), again on the compute stream, before optimizer.step().
- ``torch-view``: the same with gradient_as_bucket_view=True: the gradient already is the
  bucket view, so mark_variable_ready_dense only divides in place
  (``bucket_view.div_(div_factor_)``) and nothing is copied back. With a communication hook
  registered the reducer's divide is skipped and the hook's own passes run instead
  (``hook_divides``: torch.distributed.algorithms.ddp_comm_hooks.default_hooks.allreduce_hook
  divides the bucket buffer by the world size, ``tensor.div_(group_to_use.size())``, and a
  wrapper may divide again), once per bucket when it is full, on the compute stream; the
  hook's result aliases the bucket, so finalize_bucket_dense copies nothing.
- ``apex``: apex.parallel.DistributedDataParallel with its defaults
  (apex/parallel/distributed.py at 43a6f9f, allreduce_bucket, lines 425-476): ``tensor =
  flatten(bucket)`` (torch._utils._flatten_dense_tensors: a torch.cat copy) on the current,
  compute stream when a bucket is full; then on the bucket stream the all-reduce,
  ``tensor_to_allreduce.mul_(gradient_predivide_factor/world_size)`` (gradient_average=True;
  predivide_factor 1.0, so no divide before it) and the unflatten copy back into the
  gradients (multi_tensor_scale over unflatten(tensor, bucket) -> bucket). The bucket
  stream's kernels keep the stream (num_allreduce_streams=1) busy, so the next bucket's
  all-reduce waits for them, and overlapping_backward_epilogue makes the compute stream
  wait for them before the optimizer; they run beside the backward, on the GPU's SMs.
- ``none``: no passes (a wrapper that reduces the gradients in place, or a what-if).

The memory each style keeps for its buckets, beside the gradients (bucket_memory; counted in
the memory breakdown's buffers, so it decides whether a plan fits):

- ``torch``: the reducer allocates one flat tensor per dense bucket when DDP is built and
  keeps it (torch/csrc/distributed/c10d/reducer.cpp, Reducer::initialize_buckets: "Allocate
  the bucket's flattened `gradients` tensor", ``bucket.gradients = at::empty({offset},
  options)``), while each parameter keeps its own ``.grad``: as many bytes again as the
  gradients the buckets carry, all step long. PyTorch's DDP docstring
  (torch/nn/parallel/distributed.py, gradient_as_bucket_view): making the gradients views
  into the buckets "can reduce peak memory usage, where the saved memory size will be equal
  to the total gradients size" (pytorch/pytorch#41954: roberta-base's peak fell ~1 GB).
- ``torch-view``: none beyond the gradients: they are views into the buckets (that same
  flag), so the bucket tensors are the gradients' own storage, already counted as grads.
- ``apex``: no bucket kept between steps (retain_allreduce_buffers=False, its default):
  allreduce_bucket (apex/parallel/distributed.py at 43a6f9f, lines 425-476) makes ``tensor =
  flatten(bucket)``, a new flat copy, when a bucket is full, all-reduces it on the bucket
  stream, unflattens it back into the gradients and drops it, ``tensor.record_stream(
  bucket_stream)`` keeping its memory from reuse until the bucket stream is past the
  unflatten. So a bucket's flat copy lives from its flatten until its all-reduce's tail has
  run; counted is the most bytes of such copies alive at once in the simulated step (the
  buckets whose all-reduce waits behind another's stay alive while they wait).
- ``none``: none.

Only the gradients that go through the buckets count: the dense all-reduces the scheduler
bucketed (a table's sparse rows, a parameter server's pushes, FSDP's reduce-scatters are
not bucketed), on more than one GPU (one GPU runs no wrapper here, as it runs no passes).
The compress hook's 16-bit copy (--grad-compress) is a temporary of the hook and is not
counted.

With --grad-compress fp16|bf16 (workload.grad_compress) each bucket's FP32 gradients cross
the wire at 2 bytes per element, and the compression's own passes are added:

- the cast to 16 bits, on the compute stream when the bucket is full: DDP calls the comm
  hook from the autograd hook that completes the bucket (Reducer::mark_bucket_ready ->
  run_comm_hook), so ``buffer.to(dtype)`` runs there, after the bucket's copies, and the
  all-reduce waits for it; under ``torch``/``torch-view`` the hook also divides by the
  world size on the 16-bit copy (``.div_(world_size)``), which replaces the reducer's own
  divide (with a hook registered mark_variable_ready_dense copies without dividing) and,
  under torch-view, the hook's divides (``hook_divides``, at least one) run on the
  16-bit copy; ``apex`` / ``none`` keep their divides where they were;
- the cast back to the FP32 bucket after the all-reduce: the hook's then-callback, which
  c10's Future runs once the collective's events complete, on a side stream from the pool,
  not the compute stream; modelled as the collective's tail (anything waiting for the
  bucket waits for it; the channel's next all-reduce too, an overstatement by one cast).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..plan.names import OpId, Role, extra_name
from ..plan.ops import CommOp, ComputeOp
from ..workload.grad_compress import FP32_BYTES, WIRE_BYTES, cast_bytes
from ..workload.kernels import stream

DDP_STYLES = ("torch", "torch-view", "apex", "none")


@dataclass(frozen=True)
class GradientPasses:
    """What the passes add to one iteration's plan."""

    comms: tuple[CommOp, ...]                       # ready_after / tail rewritten
    after: tuple[tuple[OpId, ComputeOp], ...] = ()  # (stream op, pass run right after it)
    # passes run before the optimizer, each after its collective: (pass, comm op name)
    before_update: tuple[tuple[ComputeOp, str], ...] = ()
    compressed: int = 0      # buckets sent 16-bit (--grad-compress)


# what bucket_memory calls the buckets' storage in the memory breakdown (by_component)
BUCKET_BUFFERS = {"torch": "DDP flat gradient buckets",
                  "apex": "apex DDP flattened buckets in flight"}


@dataclass(frozen=True)
class BucketMemory:
    """The memory a data-parallel wrapper keeps for its gradient buckets beside the
    gradients (the module docstring says which style keeps what, and its source)."""

    name: str                # the memory breakdown's component
    # "whole": every bucket's flat tensor, all step long (torch); "in_flight": a bucket's
    # flat copy from its flatten until its all-reduce's tail has run (apex)
    held: str
    # (bucket collective's name, bytes of its flat tensor, seconds from the copy's allocation
    # to the collective being ready: the flatten pass that fills it, 0 where none is timed)
    buckets: tuple[tuple[str, float, float], ...]

    def renamed(self, prefix: str) -> "BucketMemory":
        """The same buckets with their collectives named `prefix` + name (a pipeline stage's)."""
        return replace(self, buckets=tuple((prefix + n, b, lead) for n, b, lead in self.buckets))

    def bytes_held(self, run=None) -> float:
        """Bytes held: every bucket (whole); the most bytes of flat copies alive at once in
        the simulated `run` (in_flight; each bucket alone without a run)."""
        if self.held == "whole":
            return float(sum(b for _, b, _ in self.buckets))
        if run is None:
            return float(max((b for _, b, _ in self.buckets), default=0.0))
        return peak_in_flight(self.buckets, run.comm)


def peak_in_flight(buckets, records) -> float:
    """The most bytes alive at once, each bucket's copy alive from `lead` s before its
    collective was ready until its transfer and the tail its stream runs after it end
    (CommRecord ready, end, around), over every simulated iteration."""
    info = {name: (nbytes, lead) for name, nbytes, lead in buckets}
    spans: dict[tuple[int, str], list[float]] = {}
    for r in records:
        if r.name in info:
            start, end = r.ready - info[r.name][1], r.end + r.around
            span = spans.setdefault((r.iteration, r.name), [start, end])
            span[0], span[1] = min(span[0], start), max(span[1], end)
    if not spans:
        return float(max((b for b, _ in info.values()), default=0.0))
    # frees before allocations at one instant: a copy dropped as the next is made is not both
    events = sorted([(s, 1, info[name][0]) for (_, name), (s, _) in spans.items()]
                    + [(e, 0, -info[name][0]) for (_, name), (_, e) in spans.items()])
    alive = peak = 0.0
    for _, _, delta in events:
        alive += delta
        peak = max(peak, alive)
    return float(peak)


def _bucket_ops(comms, tensors) -> list:
    """The dense gradient buckets among `comms`: the all-reduces of gradients nothing in
    the iteration waits on, which the wrapper copies, divides and (torch) stores."""
    by_name = {t.name: t for t in tensors}
    return [c for c in comms if c.op == "all_reduce" and c.category == "dense" and c.tensors
            and all(n in by_name and by_name[n].needed_by is None for n in c.tensors)]


def bucket_memory(comms, tensors, ctx, style: str, passes: "GradientPasses | None" = None) -> BucketMemory | None:
    """What `style` keeps for the dense gradient buckets among `comms` (collectives built
    from SyncTensors `tensors`; `passes`: the same buckets' passes, whose flatten ops time
    apex's copies), None where it keeps nothing beyond the gradients (torch-view, none) or
    runs no wrapper (one GPU). Each bucket's flat tensor is as wide as its gradients (the
    FP32 gradients of a --grad-compress bucket stay FP32 there)."""
    if ctx.n_gpus <= 1 or style not in BUCKET_BUFFERS:
        return None
    by_name = {t.name: t for t in tensors}
    buckets = _bucket_ops(comms, tensors)
    if not buckets:
        return None
    lead: dict[str, float] = {}
    if style == "apex" and passes is not None:
        seconds = {op.id: op.duration for _, op in passes.after}
        for c in passes.comms:
            lead[c.name] = sum(seconds.get(dep, 0.0) for dep, _ in c.ready_after)
    return BucketMemory(BUCKET_BUFFERS[style], "whole" if style == "torch" else "in_flight",
                        tuple((c.name, float(sum(by_name[n].nbytes for n in c.tensors)), lead.get(c.name, 0.0))
                              for c in buckets))


def _pass(ctx, name: str, nbytes: float, count: int = 1, ops: int = 1, copy: bool = False) -> float:
    """`count` contiguous kernels over `nbytes` in all (read + write): ATen's copy_ at copy
    bandwidth (`copy`), else an in-place scale of parameter-sized tensors. `ops` of them
    dispatched from Python, the rest launched from C++ (the reducer's autograd hooks) at
    the bare launch cost."""
    return ctx.kernel_seconds([stream(name, 2 * nbytes / count, count=count, ops=min(ops, count),
                                      param_pass=not copy, copy=copy)])


def _cast(ctx, name: str, numel: float, src: int, dst: int) -> float:
    """One elementwise cast kernel over a flat bucket (ATen's copy_ with a dtype change: a
    read and a write per element at copy bandwidth), dispatched from the Python hook."""
    return ctx.kernel_seconds([stream(name, cast_bytes(numel, src, dst), copy=True)])


def _divide16(ctx, name: str, numel: float, times: int) -> float:
    """`times` in-place divides of the 16-bit copy (the hook's ``div_``), read + write."""
    return _pass(ctx, name, numel * WIRE_BYTES * times, times, ops=times) if times else 0.0


def _tensors(ctx, layer: str) -> int:
    """Kernel launches of a per-parameter pass over `layer`: one per parameter tensor."""
    return getattr(ctx.layer(layer).kernels, "param_tensors", None) or 1


def gradient_passes(comms, tensors, ctx, style: str, hook_divides: int = 0) -> GradientPasses | None:
    """The passes of `style` over the dense gradient buckets among `comms` (collectives
    built from SyncTensors `tensors`), with --grad-compress's casts (ctx.grad_compress);
    None when there are none (one GPU, style none without compression, no bucket, or no
    kernel model to time them)."""
    compress = ctx.grad_compress
    if ctx.n_gpus <= 1 or ctx.kernel_seconds is None or (style == "none" and not compress.on):
        return None
    by_name = {t.name: t for t in tensors}
    buckets = _bucket_ops(comms, tensors)
    if not buckets:
        return None
    out: dict[str, CommOp] = {}
    after: list[tuple[OpId, ComputeOp]] = []
    before_update: list[tuple[ComputeOp, str]] = []
    compressed = 0
    for c in buckets:
        members = [by_name[n] for n in c.tensors]
        last = members[-1].ready_after      # the bucket fills when its last gradient is ready
        # the bucket's own passes are named by its last gradient's layer: buckets may fill at
        # one op (S2 Reducer's trainer packs every gradient after the backward)
        owner = members[-1].layer
        wide = _wide_numel(ctx, members, compress)   # elements cast to 16 bits (0: none)
        hooked = bool(wide) and style in ("torch", "torch-view")   # DDP's compress hook
        if style == "torch" or (style == "torch-view" and not hook_divides and not hooked):
            # per parameter, in its autograd hook: copy-with-divide (torch; a plain copy when
            # a hook divides instead, the same bytes) or divide in place
            tag = "ddp-copy-in" if style == "torch" else "ddp-divide"
            moved = {}
            kernels = [_tensors(ctx, t.layer) for t in members]
            for t, n in zip(members, kernels):
                op = extra_name(tag, t.layer)
                seconds = _pass(ctx, tag, t.nbytes, n, ops=0, copy=style == "torch")
                after.append((t.ready_after, ComputeOp(op, seconds, param_sized=True)))
                moved[t.ready_after] = op
            ready = tuple((moved.get(dep, dep), off) for dep, off in c.ready_after)
            c = replace(c, ready_after=ready)
            if style == "torch":
                back = ComputeOp(extra_name("ddp-copy-out", members[-1].layer),
                                 _pass(ctx, "ddp-copy-out", c.nbytes, sum(kernels), ops=0, copy=True),
                                 param_sized=True)
                before_update.append((back, c.name))
        elif style == "torch-view" and not hooked:
            # the hook's divides of the whole bucket buffer, when the bucket is full
            op = extra_name("ddp-hook-divide", owner)
            after.append((last, ComputeOp(op, _pass(ctx, "ddp-hook-divide", c.nbytes * hook_divides, hook_divides),
                                             param_sized=True)))
            c = replace(c, ready_after=((op, 0),))
        elif style == "apex":
            op = extra_name("ddp-flatten", owner)
            after.append((last, ComputeOp(op, _pass(ctx, "ddp-flatten", c.nbytes, copy=True), param_sized=True)))
            tail = _pass(ctx, "ddp-average", c.nbytes) + _pass(ctx, "ddp-unflatten", c.nbytes, copy=True)
            c = replace(c, ready_after=((op, 0),), tail=c.tail + tail)
        elif style not in ("none", "torch-view"):
            raise ValueError(f"ddp style {style!r}: expected one of {', '.join(DDP_STYLES)}")
        if wide:
            # the compress hook when the bucket is full (after the style's pass there, on
            # the same stream): cast, and under DDP its divides on the 16-bit copy
            divides = max(1, hook_divides) if hooked else 0
            op = extra_name(f"grad-compress-{compress}", owner)
            seconds = (_cast(ctx, f"grad-compress-{compress}", wide, FP32_BYTES, WIRE_BYTES)
                       + _divide16(ctx, "grad-compress-divide", wide, divides))
            after.append((last, ComputeOp(op, seconds, param_sized=True)))
            back = _cast(ctx, f"grad-decompress-{compress}", wide, WIRE_BYTES, FP32_BYTES)
            c = replace(c, nbytes=c.nbytes - wide * (FP32_BYTES - WIRE_BYTES), ready_after=((op, 0),),
                        tail=c.tail + back)
            compressed += 1
        out[c.name] = c
    return GradientPasses(comms=tuple(out.get(c.name, c) for c in comms), after=tuple(after),
                          before_update=tuple(before_update), compressed=compressed)


def _wide_numel(ctx, members, compress) -> float:
    """Elements of the bucket's gradients wider than 16 bits that --grad-compress casts (the
    cast of a 16-bit gradient is the identity: nothing moves); 0 without compression."""
    if not compress.on:
        return 0.0
    numel = 0.0
    for t in members:
        elem = ctx.model.grad_elem_bytes(ctx.layer(t.layer))
        if compress.wire_bytes(elem) < elem:
            if elem != FP32_BYTES:
                raise ValueError(f"grad-compress: {elem}-byte gradient of {t.layer}: only FP32 is cast")
            numel += t.nbytes / elem
    return numel


def insert_passes(stream_ops: list, passes: GradientPasses) -> list:
    """The compute stream with the passes in place: each `after` pass right after its op
    (after any pass already placed there), copies back just before the first update."""
    ids = {s.id for s in stream_ops}
    placed: dict[OpId, list[ComputeOp]] = {}
    for anchor, op in passes.after:
        if anchor not in ids:
            raise ValueError(f"gradient pass {op.name}: no stream op {anchor}")
        placed.setdefault(anchor, []).append(op)
    out = []
    for s in stream_ops:
        out.append(s)
        out.extend(placed.get(s.id, ()))
    if passes.before_update:
        first = next((i for i, s in enumerate(out) if s.id.role is Role.UPDATE), len(out))
        out[first:first] = [op for op, _ in passes.before_update]
    return out

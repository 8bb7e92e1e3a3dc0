"""Compose one iteration's StepPlan from the model, the strategy and the scheduler.

Stream order per iteration (plan.names.stream_order):
  DDP-style (scheduler.per_layer_update False): fwd layers, bwd layers reversed, then
      the optimizer updates, the first of which waits for every gradient collective
      (optimizer.step() runs after backward() has returned).
  per-layer (P3 / ByteScheduler): update of layer i (with the previous iteration's
      gradient) immediately before the forward of layer i, so the next forward waits
      only for the layers it reaches; deferred parts of updates after the forward.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import ModelNotSupported
from ..plan.names import OpId, Role, bwd_name, fwd_name, stream_order, update_name
from ..plan.ops import ComputeOp, StepPlan
from ..schedulers.ddp_passes import insert_passes
from .tp_plan import add_tensor_parallel
from .cp_plan import add_context_parallel


def build_step_plan(ctx, strategy_plan, strategy, scheduler) -> StepPlan:
    layers = [l.name for l in ctx.model.layers]
    per_layer = scheduler.per_layer_update
    strategy_plan = scheduler.transform(strategy_plan, ctx, strategy)
    notes = tuple(strategy_plan.notes)
    update_time: dict[OpId, float] = {update_name(n): t for n, t in strategy_plan.update_time.items()}
    update_time.update({update_name(n, deferred=True): t
                        for n, t in strategy_plan.deferred_update_time.items()})
    # every layer a gradient is sent for gets an update op, even a free one
    for t in strategy_plan.sync:
        if t.needed_by is None:
            update_time.setdefault(t.update_of or update_name(t.layer), 0.0)
    unknown = [str(n) for n in update_time if n.layer not in layers]
    if unknown:
        raise ValueError(f"update targets {unknown} name no layer")
    ops = {op_id: ComputeOp(op_id, update_time[op_id], lagged=per_layer, param_sized=True) for op_id in update_time}
    for n in layers:
        f, b = strategy_plan.layer_time_scale.get(n, (1.0, 1.0))
        ops[fwd_name(n)] = ComputeOp(fwd_name(n), ctx.layer_fwd[n] * f)
        ops[bwd_name(n)] = ComputeOp(bwd_name(n), ctx.layer_bwd[n] * b)
    stream = [ops[op_id] for op_id in stream_order(layers, per_layer) if op_id in ops]
    # a scheduler may reorder computation (EmbRace: input gradients before weight gradients)
    stream = list(scheduler.rewrite_stream(stream, ctx))

    for before, op in strategy_plan.extra:
        ids = [s.id for s in stream]
        if before not in ids:
            raise ValueError(f"strategy extra op {op.name}: no stream op {before}")
        stream.insert(ids.index(before), op)

    position = {op.id: i for i, op in enumerate(stream)}
    for t in strategy_plan.sync:
        if t.ready_after not in position:
            raise ValueError(f"sync tensor {t.name}: no stream op {t.ready_after}")
    tensors = sorted(strategy_plan.sync, key=lambda t: position[t.ready_after])
    comms = scheduler.build(tensors, ctx)
    # the wrapper's passes over the gradient buckets (copies, divides) on the compute stream
    # or after a collective on its own stream; only with more than one GPU
    passes = scheduler.gradient_passes(comms, tensors, ctx)
    check_compressed(ctx, passes, strategy, scheduler)
    # and the memory it keeps for those buckets (PyTorch DDP's flat bucket tensors)
    bucket_memory = scheduler.bucket_memory(comms, tensors, ctx, passes)
    if passes is not None:
        comms = passes.comms
        stream = insert_passes(stream, passes)

    # context parallelism's KV ring beside each block's attention steps (engine.cp_plan),
    # placed first: a tensor-parallel collective the next op waits for then holds the
    # next block's ring too (its first op is the ring's post)
    stream, cp_comms, cp_waits, _ = add_context_parallel(stream, ctx)
    # tensor parallelism's activation collectives (engine.tp_plan); a block's gradient is
    # whole only after its column-parallel GEMMs' weight gradients (the tp-wgrad op)
    stream, tp_comms, tp_waits, moved = add_tensor_parallel(stream, ctx)
    for op_id, lst in cp_waits.items():
        tp_waits.setdefault(op_id, []).extend(lst)
    if moved:
        comms = [replace(c, ready_after=tuple((moved.get(d, d), o) for d, o in c.ready_after))
                 for c in comms]
    comms = list(comms) + tp_comms + cp_comms

    carriers: dict[str, list[str]] = {}
    for c in comms:
        for name in c.tensors:
            carriers.setdefault(name, []).append(c.name)
    waits: dict[OpId, list] = {}
    gradient_comms: list[str] = []
    for t in tensors:
        if t.name not in carriers:
            raise ValueError(f"scheduler {scheduler.name} dropped sync tensor {t.name}")
        if t.needed_by is not None:
            # the next run of the consumer after ready_after: this iteration's if it comes
            # later in the stream, else the next iteration's (e.g. a PS pull after the update)
            consumer = t.needed_by
            if consumer not in position:
                raise ValueError(f"sync tensor {t.name}: no stream op {consumer}")
            offset = 0 if position[consumer] > position[t.ready_after] else -1
        else:
            consumer = t.update_of or update_name(t.layer)
            offset = -1 if per_layer else 0
            gradient_comms += carriers[t.name]
        for c in carriers[t.name]:
            if (c, offset) not in waits.setdefault(consumer, []):
                waits[consumer].append((c, offset))
    for op_id, lst in tp_waits.items():
        waits.setdefault(op_id, []).extend(lst)
    for op, comm in (passes.before_update if passes is not None else ()):
        waits.setdefault(op.id, []).append((comm, 0))
    if not per_layer and gradient_comms:
        first_update = next((op.id for op in stream if op.id.role is Role.UPDATE), None)
        if first_update is not None:
            lst = waits.setdefault(first_update, [])
            for c in dict.fromkeys(gradient_comms):
                if (c, 0) not in lst:
                    lst.append((c, 0))
    return StepPlan(stream=tuple(stream), comms=tuple(comms),
                    comm_waits={k: tuple(v) for k, v in waits.items()}, notes=notes,
                    bucket_memory=bucket_memory)


def check_compressed(ctx, passes, strategy, scheduler) -> None:
    """--grad-compress is the DDP comm hook's (or Horovod's) cast of the wrapper's gradient
    buckets: a run with FP32 gradients on several GPUs whose plan has no such bucket (FSDP's
    reduce-scatters, parameter servers, a scheduler that partitions instead of bucketing)
    would ignore it silently, so it is refused (compare lists the combination as refused)."""
    compress = ctx.grad_compress
    if not compress.on or ctx.n_gpus <= 1 or (passes is not None and passes.compressed):
        return
    model = ctx.model
    if not any(compress.wire_bytes(model.grad_elem_bytes(l)) < model.grad_elem_bytes(l)
               for l in model.layers if l.params > 0):
        return      # 16-bit gradients: a no-op, which the output says
    raise ModelNotSupported(f"--grad-compress {compress}: strategy {strategy.name} with scheduler "
                     f"{scheduler.name} all-reduces no DDP gradient bucket to compress "
                     f"(modelled for the data-parallel buckets of --scheduler fifo)")

"""Compose one iteration's StepPlan from the model, the strategy and the scheduler.

Stream order per iteration:
  DDP-style (scheduler.per_layer_update False): fwd layers, bwd layers reversed, then
      the optimizer updates, the first of which waits for every gradient collective
      (optimizer.step() runs after backward() has returned).
  per-layer (P3 / ByteScheduler): update of layer i (with the previous iteration's
      gradient) immediately before the forward of layer i, so the next forward waits
      only for the layers it reaches; deferred parts (deferred(layer)) after the forward.
"""

from __future__ import annotations

from .ops import ComputeOp, StepPlan


def fwd_name(layer: str) -> str:
    return f"fwd:{layer}"


def bwd_name(layer: str) -> str:
    return f"bwd:{layer}"


def update_name(layer: str) -> str:
    return f"update:{layer}"


DEFERRED = "#deferred"


def deferred(layer: str) -> str:
    """Update-target name for the part of a layer's update that may wait until after the
    next forward of that layer (EmbRace's horizontal scheduling)."""
    return layer + DEFERRED


def stream_order(layers: list[str], per_layer: bool) -> list[str]:
    """Names of one iteration's stream ops in order, for every op that may exist (the
    builder keeps those that do). Schedulers that key priorities on when the next
    iteration needs something read positions from here."""
    if per_layer:
        names = [n for layer in layers for n in (update_name(layer), fwd_name(layer))]
        # deferred parts touch rows the next batch does not read: they may wait until the
        # whole next forward has run (EmbRace's horizontal scheduling)
        names += [update_name(deferred(layer)) for layer in layers]
        return names + [bwd_name(layer) for layer in reversed(layers)]
    names = [fwd_name(layer) for layer in layers] + [bwd_name(layer) for layer in reversed(layers)]
    return names + [update_name(n) for layer in layers for n in (layer, deferred(layer))]


def build_step_plan(ctx, strategy_plan, scheduler) -> StepPlan:
    layers = [l.name for l in ctx.model.layers]
    per_layer = scheduler.per_layer_update
    strategy_plan = scheduler.transform(strategy_plan, ctx)
    notes = tuple(strategy_plan.notes)
    update_time = dict(strategy_plan.update_time)
    # every layer a gradient is sent for gets an update op, even a free one
    for t in strategy_plan.sync:
        if t.needed_by is None:
            update_time.setdefault(t.update_of or t.layer, 0.0)
    unknown = [n for n in update_time if n.removesuffix(DEFERRED) not in layers]
    if unknown:
        raise ValueError(f"update targets {unknown} name no layer")
    updates = {name: ComputeOp(update_name(name), "update", name.removesuffix(DEFERRED),
                               update_time[name], lagged=per_layer)
               for name in update_time}

    ops = {op.name: op for op in updates.values()}
    for n in layers:
        ops[fwd_name(n)] = ComputeOp(fwd_name(n), "fwd", n, ctx.layer_fwd[n])
        ops[bwd_name(n)] = ComputeOp(bwd_name(n), "bwd", n, ctx.layer_bwd[n])
    stream = [ops[name] for name in stream_order(layers, per_layer) if name in ops]
    # a scheduler may reorder computation (EmbRace: input gradients before weight gradients)
    stream = list(scheduler.rewrite_stream(stream, ctx))

    for before, op in strategy_plan.extra:
        names = [s.name for s in stream]
        if before not in names:
            raise ValueError(f"strategy extra op {op.name}: no stream op {before!r}")
        stream.insert(names.index(before), op)

    position = {op.name: i for i, op in enumerate(stream)}
    for t in strategy_plan.sync:
        if t.ready_after not in position:
            raise ValueError(f"sync tensor {t.name}: no stream op {t.ready_after!r}")
    tensors = sorted(strategy_plan.sync, key=lambda t: position[t.ready_after])
    comms = scheduler.build(tensors, ctx)

    carriers: dict[str, list[str]] = {}
    for c in comms:
        for name in c.tensors:
            carriers.setdefault(name, []).append(c.name)
    waits: dict[str, list] = {}
    gradient_comms: list[str] = []
    for t in tensors:
        if t.name not in carriers:
            raise ValueError(f"scheduler {scheduler.name} dropped sync tensor {t.name}")
        if t.needed_by is not None:
            # the next run of the consumer after ready_after: this iteration's if it comes
            # later in the stream, else the next iteration's (e.g. a PS pull after the update)
            consumer = t.needed_by
            if consumer not in position:
                raise ValueError(f"sync tensor {t.name}: no stream op {consumer!r}")
            offset = 0 if position[consumer] > position[t.ready_after] else -1
        else:
            consumer = update_name(t.update_of or t.layer)
            offset = -1 if per_layer else 0
            gradient_comms += carriers[t.name]
        for c in carriers[t.name]:
            if (c, offset) not in waits.setdefault(consumer, []):
                waits[consumer].append((c, offset))
    if not per_layer and gradient_comms:
        first_update = next((op.name for op in stream if op.kind == "update"), None)
        if first_update is not None:
            lst = waits.setdefault(first_update, [])
            for c in dict.fromkeys(gradient_comms):
                if (c, 0) not in lst:
                    lst.append((c, 0))
    return StepPlan(stream=tuple(stream), comms=tuple(comms),
                    comm_waits={k: tuple(v) for k, v in waits.items()}, notes=notes)

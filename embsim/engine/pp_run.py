"""Pipeline parallelism in a simulation run: the stages' contexts, plans, rank classes,
groups and memory (engine.pp_plan unrolls the plans into 1F1B programs), and what the
output says about the pipeline afterwards (its bubble, read off the simulated timeline).

Ranks: Megatron's tp-cp-dp-pp order, stage s = ranks [s W/P, (s+1) W/P) of W GPUs
(workload.pipeline_parallel). Inside a stage the data-parallel groups are the ranks with
the same tensor-parallel index and the TP groups K consecutive ranks, as without pipeline
parallelism. Each stage's plan is the one-micro-batch plan of the stage's layers
(build_step_plan: the strategy's gradient collectives over the stage's DP groups, its TP
collectives); a stage's memory is its layers' parameters, gradients and optimizer state
plus min(P - s, m) micro-batches of its activations (1F1B); the output reports the worst.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import InputError
from ..plan.timeline import RankClass
from ..workload.memory import MemoryBreakdown
from ..workload.pipeline_interleaved import peak_activations
from ..workload.tensor_parallel import BLOCK_KINDS
from .build import build_step_plan
from .pp_plan import is_pp_channel, pipeline_plan
from .cp_plan import CHANNEL as CP_CHANNEL, cp_groups
from .tp_plan import tp_groups


@dataclass(frozen=True)
class Pipelined:
    plan: object            # StepPlan with per-class streams
    classes: tuple          # rank classes, each of one stage
    groups: dict            # every CommOp.group the plan names -> its rank groups
    memory: object          # MemoryBreakdown of the worst stage
    stage_of: dict          # class name -> stage
    act_bytes: float        # one stage-to-stage transfer
    # each rank's (stage's) MemoryBreakdown before its gradient buckets, and what its
    # data-parallel wrapper keeps for them (a BucketMemory or None), stage by stage
    rank_memories: tuple = ()
    rank_buckets: tuple = ()

    def memory_with_buckets(self, run):
        """The worst stage's memory with its wrapper's gradient buckets held, as the
        simulated `run` holds them (schedulers.ddp_passes.BucketMemory.bytes_held)."""
        if not any(self.rank_buckets):
            return self.memory
        held = [mem if b is None else mem.with_buffer(b.name, b.bytes_held(run))
                for mem, b in zip(self.rank_memories, self.rank_buckets)]
        return max(held, key=lambda m: m.total)


def stage_context(ctx, layers):
    """The step context of one stage: its layers, the tables they use, their traffic."""
    model = ctx.model
    names = {l.name for l in layers}
    tables = tuple(t for t in model.tables if any(l.table == t.name for l in layers))
    params = sum(l.params for l in layers)
    # the tables the stage owns: its lookups' and an output layer's own (a sampled softmax's)
    emb = sum(l.params for l in layers if l.kind == "embedding") + sum(
        t.vocab * t.dim for t in tables for l in layers if t.weight_of == l.name)
    sub = replace(model, layers=tuple(layers), tables=tables, params=params,
                  embedding_params=emb, dense_params=params - emb)
    return replace(ctx, model=sub, tables={k: v for k, v in ctx.tables.items() if k in names})


def stage_groups(stage: int, n_per: int, tp: int, cp: int = 1) -> dict:
    """A stage's data-parallel, TP and (with context parallelism) CP groups, named apart
    from the other stages'. Megatron's rank order tp-cp-dp-pp: a stage's n_per ranks are
    its TP x CP x DP block."""
    base = stage * n_per
    groups = {f"{key or 'dp'}@s{stage}": g for key, g in tp_groups(n_per, tp, base).items()}
    if cp > 1:
        groups[f"{CP_CHANNEL}@s{stage}"] = tuple(tuple(base + r for r in g)
                                                 for g in cp_groups(n_per, tp, cp))
    return groups


def transfer_bytes(model) -> float:
    """One stage-to-stage tensor: micro-batch x seq x hidden in the activations' 16-bit
    dtype (Megatron's pipeline_dtype; FP8 GEMMs keep BF16 activations), / TP with
    sequence parallelism (get_tensor_shapes)."""
    block = next(l for l in model.layers if l.kind in BLOCK_KINDS)
    tokens = model.batch * model.seq
    elem = max(model.dtype_bytes, 2)
    hidden = block.input_bytes // elem // tokens if block.input_bytes else 0
    if hidden <= 0:
        raise InputError(f"--pipeline-parallel: model {model.name}'s blocks give no hidden size")
    tp = model.tensor_parallel
    return float(tokens * hidden * elem) / (tp.size if tp.sequence else 1)


def pipelined(ctx, pp, micro_batches: int, strategy, scheduler, classes, n_gpus: int,
              single_update, tied: bool) -> Pipelined:
    """`single_update(stage_ctx, dense_table_gradient)`: a one-replica stage's optimizer
    seconds (engine.run.single_gpu_update_time); `tied`: the zoo model ties its output
    layer to the word embedding (Megatron then keeps a copy on the last stage)."""
    model = ctx.model
    tp = model.tensor_parallel.size
    n_per = n_gpus // pp.size
    dp = n_per // tp
    stage_ranks = [tuple(range(s * n_per, (s + 1) * n_per)) for s in range(pp.size)]
    pp.check_micro_batches(micro_batches)
    plans, memories, groups, once, buckets = [], [], {}, [], []
    for v, layers in enumerate(pp.stages(model.name, model.layers)):
        s = v % pp.size         # virtual stage v = chunk v // P of rank (stage) v mod P
        sctx = stage_context(ctx, layers)
        splan = strategy.plan(sctx)
        if dp == 1:
            splan = replace(splan, sync=(), extra=(),
                            update_time=single_update(sctx, strategy.dense_table_gradient))
        plan = build_step_plan(sctx, splan, strategy, scheduler)
        plans.append(_own_names(plan, v, s, stage_ranks[s]))
        buckets.append(None if plan.bucket_memory is None else plan.bucket_memory.renamed(f"s{v}:"))
        # a strategy that gathers parameters once per optimizer step (distopt): its gathers
        # wait for no micro-batch after the first
        gathers = (set() if strategy.gathers_every_micro_batch
                   else {t.name for t in splan.sync if t.needed_by is not None})
        once.append({f"s{v}:{c.name}" for c in plan.comms if c.tensors and set(c.tensors) <= gathers})
        memories.append(splan.memory)
        groups.update(stage_groups(s, n_per, tp, model.context_parallel.size))
    if pp.interleaved:
        memories = [rank_memory(memories[s::pp.size], pp.program(s, micro_batches))
                    for s in range(pp.size)]
    else:
        memories = [_held(mem, pp.in_flight(s, micro_batches)) for s, mem in enumerate(memories)]
    tied_bytes = 0.0
    if tied and dp * tp * pp.size > 1:
        emb = next(l for l in model.layers if l.kind == "embedding")
        tied_bytes = float(emb.params * model.grad_elem_bytes(emb))
    act = transfer_bytes(model)
    plan, streams, pp_groups = pipeline_plan(pp, micro_batches, plans, stage_ranks, act,
                                             tied_bytes, tp, once)
    groups.update(pp_groups)
    staged, by_class, stage_of = [], {}, {}
    for cls in classes:
        for s, ranks in enumerate(stage_ranks):
            mine = tuple(r for r in cls.ranks if ranks[0] <= r <= ranks[-1])
            if mine:
                name = f"{cls.name}/stage{s}"
                staged.append(RankClass(name, mine, cls.slowdown, cls.param_slowdown))
                by_class[name] = streams[s]
                stage_of[name] = s
    worst = max(memories, key=lambda m: m.total)
    # a rank's virtual stages' buckets, held by its one wrapper (its chunks' DDP instances)
    per_rank = []
    for s in range(pp.size):
        mine = [b for b in buckets[s::pp.size] if b is not None]
        per_rank.append(replace(mine[0], buckets=tuple(x for b in mine for x in b.buckets)) if mine else None)
    return Pipelined(replace(plan, streams=by_class), tuple(staged), groups, worst, stage_of, act,
                     rank_memories=tuple(memories), rank_buckets=tuple(per_rank))


def _held(mem, held: int):
    """A stage's memory with `held` micro-batches' activations alive (1F1B's in-flight count)."""
    parts = dict(mem.by_component)
    if "activations" in parts:
        parts["activations"] = parts["activations"] * held
    return replace(mem, activations=mem.activations * held, by_component=parts)


def rank_memory(chunk_memories, program):
    """One rank of an interleaved pipeline: its V chunks' parameters, gradients and optimizer
    state summed, plus the most activations its program holds at once (forward-without-
    backward micro-batches of each chunk, pipeline_interleaved.peak_activations)."""
    per_chunk = [mem.activations for mem in chunk_memories]
    activations = int(round(peak_activations(program, per_chunk)))
    parts: dict = {}
    for mem in chunk_memories:
        for k, b in mem.by_component.items():
            if k != "activations":
                parts[k] = parts.get(k, 0) + b
    if any("activations" in mem.by_component for mem in chunk_memories):
        parts["activations"] = activations
    return MemoryBreakdown(params=sum(m.params for m in chunk_memories),
                           grads=sum(m.grads for m in chunk_memories),
                           optimizer_state=sum(m.optimizer_state for m in chunk_memories),
                           master_weights=sum(m.master_weights for m in chunk_memories),
                           activations=activations, by_component=parts,
                           buffers=sum(m.buffers for m in chunk_memories))


def _own_names(plan, prefix: int, stage: int, ranks: tuple):
    """A (virtual) stage's plan with its collectives named apart from the other stages'
    (every stage's plan has its bucket0 ...), over its rank's GPUs, groups and channels
    (a rank's virtual stages share its channels: one communicator per group of GPUs)."""
    name = {c.name: f"s{prefix}:{c.name}" for c in plan.comms}

    def dep(d):
        return name.get(d, d) if isinstance(d, str) else d
    # its own channels too: one stage's TP or data-parallel collectives queue on that stage's
    # communicators only, not behind every other stage's (they run on other GPUs)
    comms = tuple(replace(c, name=name[c.name], group=f"{c.group or 'dp'}@s{stage}", ranks=ranks,
                          channel=f"{c.channel}@s{stage}",
                          ready_after=tuple((dep(d), o) for d, o in c.ready_after))
                  for c in plan.comms)
    waits = {k: tuple((dep(d), o) for d, o in v) for k, v in plan.comm_waits.items()}
    return replace(plan, comms=comms, comm_waits=waits)


def pipeline_label(pp, micro_batches: int, run, stage_of: dict, step: float, act_bytes: float) -> str:
    """What the output says: the bubble (the stages' idle share of the step, from the
    simulated timeline's measured iterations) and each stage's compute per step."""
    from .metrics import steady_window
    first, last = steady_window(run)
    n = max(last - first, 1)
    # a stage's busy time: its slowest class's (classes of one stage run the same program)
    per_class: dict[str, float] = {}
    for r in run.compute:
        if first < r.iteration <= last and r.cls in stage_of:
            per_class[r.cls] = per_class.get(r.cls, 0.0) + (r.end - r.start)
    stage_busy = [max((v / n for c, v in per_class.items() if stage_of[c] == s), default=0.0)
                  for s in range(pp.size)]
    idle = [max(0.0, 1.0 - b / step) for b in stage_busy] if step > 0 else [0.0] * pp.size
    p2p = [r for r in run.comm if first < r.iteration <= last and is_pp_channel(r.channel)
           and r.op == "sendrecv"]
    # the chunk boundaries: P - 1 stage pairs, P V - 1 with a virtual pipeline
    p2p_s = sum(r.end - r.start for r in p2p) / n / max(2 * (pp.chunks - 1), 1)
    times = ", ".join(f"{b * 1e3:.1f}" for b in stage_busy)
    return (f"{pp.label(micro_batches)}: bubble {100 * sum(idle) / len(idle):.1f} % (mean idle "
            f"share of the step over stages), p2p {act_bytes / 2**20:.1f} MiB per transfer, "
            f"{p2p_s * 1e3:.1f} ms per {'chunk boundary' if pp.interleaved else 'stage pair'} and "
            f"direction per step; stage compute "
            f"{times} ms per step")

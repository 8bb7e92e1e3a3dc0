"""simulate(config) -> SimulationResult: the whole pipeline of one training-step
simulation, from names and files to figures. Used by `embsim simulate`, `compare`,
`sweep`, `scale` and `validate`.

Each input is resolved once here: the topology spec, the model, the trace (into
MeasuredInputs for this topology), the strategy and scheduler with their typed options.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from ..collectives import CollectiveModel
from ..collectives.nccl_env import NcclEnv
from ..errors import InputError
from ..collectives.busbw import busbw_factor
from ..collectives.servers import SERVER_OPS
from ..network import Network
from ..plan.ops import channel_family
from ..schedulers import SCHEDULERS
from ..strategies import STRATEGIES
from ..strategies.common import sparse_tables
from ..topology import Topology, load_topology
from ..trace import load_trace
from ..workload import load_model, load_spec
from ..workload.grad_compress import GradCompress
from .build import build_step_plan
from .accumulate import (accumulate, combine_micro_batches, global_batch_micro_batches, master_accumulate_s,
                         without_update)
from .classes import rank_classes
from .config import SimulationConfig, pipeline_parallel_of, with_options
from .context import step_context
from .jitter import NONE, budget_fill, jitter_factors, param_factors, parse_jitter, with_jitter
from . import gpu_speed, interference, iteration_rate
from .lengths import parse_lengths
from .padded import check_padding
from ..workload.padding import parse_padding
from .measured import MeasuredInputs
from .metrics import step_metrics
from .options_used import options_used
from .result import ClusterShape, SimulationResult
from .parallel_checks import check_context_parallel, check_parallelism, check_pipeline_run
from .run_notes import (accumulated_rows_note, global_batch_note, seq_as_mean_label, superlinear_note,
                        unauthored_pairing_note, unused_flag_notes)
from .simulation import Engine
from .tp_plan import CHANNEL as TP_CHANNEL, tp_groups
from .pp_plan import is_pp_channel
from .pp_run import pipeline_label, pipelined
from .cp_plan import CHANNEL as CP_CHANNEL, cp_groups, cp_label
from ..workload.tensor_parallel import BLOCK_KINDS

__all__ = ["SimulationConfig", "SimulationResult", "simulate"]



def simulate(cfg: SimulationConfig, trace=None) -> SimulationResult:
    """`trace`: the already loaded trace cfg.trace names (a caller that holds it, such as
    validate --trace, passes it instead of having it read again)."""
    given = cfg
    cfg, topo, model, tied = prepare(cfg)
    if trace is None and cfg.trace:
        trace = load_trace(cfg.trace)
    result = _simulate(cfg, topo, model, trace, tied)
    # the options as resolved for this run (defaults, the model file's, --option), said by
    # every output that prints the result
    return replace(result, options_used=options_used(given, cfg))


def prepare(cfg: SimulationConfig):
    """(cfg with the model's defaults and global batch, topology, model, tied): what
    simulate() checks and builds before it simulates, each refusal one line (the
    parallelism sizes against the topology, the model and each other). A sweep or scale
    runs it on every point before any point runs (sweep.check)."""
    cfg = with_model_defaults(cfg)
    topo = load_topology(cfg.topology)
    if cfg.hardware:
        topo = topo.with_overrides(**cfg.hardware)
    tp, pp, cp = check_parallelism(cfg, topo)
    model = load_model(cfg.model, batch=cfg.batch, seq=cfg.seq, untie_outputs=cfg.untie_outputs,
                       dtype=cfg.dtype, overrides=cfg.model_overrides, amp=cfg.amp,
                       recompute=cfg.recompute, tensor_parallel=tp, context_parallel=cp)
    check_context_parallel(cfg, cp)       # after the model's own refusals
    tied = False
    if pp.on:
        pp.stages(model.name, model.layers)      # refuses a split Megatron refuses
        check_pipeline_run(cfg, pp)
        tied = any(t.tied_to for t in model.tables)
        if tied:
            # Megatron keeps the tied output layer's own copy of the word embedding on the
            # last stage (its gradient all-reduced with the first's: engine.pp_plan)
            model = load_model(cfg.model, batch=cfg.batch, seq=cfg.seq, untie_outputs=True,
                               dtype=cfg.dtype, overrides=cfg.model_overrides, amp=cfg.amp,
                               recompute=cfg.recompute, tensor_parallel=tp, context_parallel=cp)
    cfg = with_global_batch(cfg, model.batch, topo.n_gpus // (tp.size * pp.size * cp.size))
    return cfg, topo, model, tied


def with_model_defaults(cfg: SimulationConfig) -> SimulationConfig:
    """What the run leaves unsaid, from the model zoo file's `defaults:` (how its reference
    trainer runs it): amp style, jitter (`none` turns a zoo jitter off), without --lengths
    or --corpus the corpus's sentence lengths, without --padding the trainer's padding at
    the run's seq (`max` turns it off), how accumulated gradients synchronise, and the
    strategy/scheduler options the trainer sets (its DDP buckets), each where the run's
    strategy or scheduler takes it and the run gives no --option of its own for it. The
    accumulation itself needs the GPU count (with_global_batch)."""
    spec = load_spec(cfg.model)
    if cfg.lengths is not None and cfg.corpus:
        raise InputError(f"--lengths {cfg.lengths} and --corpus {cfg.corpus} both give the sample "
                         f"lengths: give one")
    for key in ("jitter", "lengths"):
        value = getattr(spec, key)
        try:
            (parse_jitter if key == "jitter" else parse_lengths)(value)
        except InputError as exc:
            raise InputError(f"{spec.path}: defaults.{key}: {exc}") from None
    jitter = spec.jitter if cfg.jitter is None else cfg.jitter
    lengths = cfg.lengths
    if lengths is None and cfg.corpus is None:
        lengths = spec.lengths
    padding, origin = cfg.padding, "--padding"
    seq = cfg.seq or spec.seq
    if padding is None:
        padding, origin = spec.padding_for(seq), f"{spec.path}: defaults.padding at seq {seq}:"
    jitter = None if jitter == NONE else jitter
    check_padding(padding, lengths, cfg.corpus, jitter, origin, seq)
    if spec.options:
        try:
            zoo = with_options(replace(cfg, strategy_options={}, scheduler_options={}),
                               dict(spec.options), strict=False)
            STRATEGIES.get(cfg.strategy).from_options(zoo.strategy_options)    # values checked here,
            SCHEDULERS.get(cfg.scheduler).from_options(zoo.scheduler_options)  # naming the zoo file
        except InputError as exc:
            raise InputError(f"{spec.path}: defaults.options: {exc}") from None
        cfg = replace(cfg, strategy_options={**zoo.strategy_options, **cfg.strategy_options},
                      scheduler_options={**zoo.scheduler_options, **cfg.scheduler_options})
    return replace(cfg, amp=cfg.amp or spec.amp or "autocast", jitter=jitter, lengths=lengths,
                   padding=padding,
                   accumulate_sync=cfg.accumulate_sync or spec.accumulate_sync or "last",
                   throughput=cfg.throughput or spec.throughput or "time")


def one_gpu_label(cfg: SimulationConfig, tensor_parallel: bool, strategy, ctx) -> str:
    """What --strategy and --scheduler still change where nothing is synchronised: a table
    whose gradient can be sparse is stepped as dense (vocab x dim) under a dense strategy
    and as its looked-up rows under a sparse one, on one GPU too."""
    where = "tensor-parallel group" if tensor_parallel else "GPU"
    if not sparse_tables(ctx):
        return (f"one {where}: nothing to synchronise, so --strategy {cfg.strategy} and "
                f"--scheduler {cfg.scheduler} change nothing")
    alike = [n for n in STRATEGIES.names()
             if STRATEGIES.get(n).dense_table_gradient == strategy.dense_table_gradient]
    kind = "dense (vocab x dim)" if strategy.dense_table_gradient else "sparse (the rows looked up)"
    return (f"one {where}: nothing to synchronise, so --scheduler {cfg.scheduler} changes "
            f"nothing and --strategy {cfg.strategy} only the tables' gradient: {kind}, "
            f"as under {', '.join(alike)}")


def with_global_batch(cfg: SimulationConfig, batch: int, n_gpus: int) -> SimulationConfig:
    """A run that does not say --accumulate accumulates to the zoo file's `global_batch`
    (the global batch its reference benchmark fixes whatever the GPU count):
    accumulate.global_batch_micro_batches."""
    if cfg.accumulate is not None:
        return cfg
    k = global_batch_micro_batches(load_spec(cfg.model).global_batch, batch, n_gpus)
    return replace(cfg, accumulate=k)


def _simulate(cfg: SimulationConfig, topo: Topology, model, trace, tied: bool = False) -> SimulationResult:
    """`tied`: under pipeline parallelism, the zoo model ties its output layer to the word
    embedding (`model` is then the untied one, the last stage's copy)."""
    wall0 = time.perf_counter()
    strategy = STRATEGIES.get(cfg.strategy).from_options(cfg.strategy_options)
    scheduler = SCHEDULERS.get(cfg.scheduler).from_options(cfg.scheduler_options)
    scheduler.check(strategy)

    topo = strategy.topology(topo)     # e.g. parameter-server machines attached
    measured = MeasuredInputs.resolve(trace, topo)
    ctx, compute_source = step_context(model, topo, measured, cfg, strategy.dense_table_gradient)
    one_micro_batch = ctx
    # apex-DDP-style accumulation synchronises every micro-batch: simulated one at a time
    pp = pipeline_parallel_of(cfg)
    each = cfg.accumulate > 1 and cfg.accumulate_sync == "every" and topo.n_gpus // model.tensor_parallel.size > 1
    tp = model.tensor_parallel
    cp = model.context_parallel
    # the data-parallel group's size (with context parallelism Megatron's
    # data_parallel_group_with_cp: C ranks per replica), and the model replicas
    dp = topo.n_gpus // (tp.size * pp.size)
    replicas = dp // cp.size

    def strategy_plan(ctx):
        splan = strategy.plan(ctx)
        if dp > 1:
            return splan
        # One GPU synchronises nothing: every strategy is plain single-GPU training and
        # steps alike, its tables updated as its backward leaves their gradient; tables in
        # host memory or on servers (StrategyPlan.host_sync) still copy in and out and update
        # on the CPU, and a table a strategy keeps dense (one_gpu_updates) keeps its update
        update = single_gpu_update_time(ctx, strategy.dense_table_gradient)
        update.update({s.layer: splan.update_time[s.layer] for s in splan.host_sync})
        update.update({layer: splan.update_time[layer] for layer in splan.one_gpu_updates})
        return replace(splan, sync=splan.host_sync, extra=(), update_time=update)

    splan = strategy_plan(ctx)
    # with tensor parallelism every micro-batch runs its TP collectives (with context
    # parallelism its KV ring); and every micro-batch runs the strategy's transfers that a
    # forward or backward waits for (EmbRace's AlltoAlls of looked-up vectors and their
    # gradients, a parameter server's pulled rows, FSDP's parameter gathers: no_sync skips
    # only the gradient synchronisation): the K-1 earlier ones are simulated apart too,
    # not folded into compute
    exchanges_each = strategy.gathers_every_micro_batch and any(t.needed_by is not None
                                                                for t in splan.sync)
    apart = ((tp.on or cp.on or exchanges_each) and cfg.accumulate > 1 and not each and not pp.on)
    # a pipeline runs every micro-batch on its stages' streams (engine.pp_plan)
    k_folded = 1 if each or apart or pp.on else cfg.accumulate
    if k_folded > 1:
        ctx = accumulate(ctx, k_folded, cfg.amp)
        splan = strategy_plan(ctx)
    plan = build_step_plan(ctx, splan, strategy, scheduler)
    variation = gpu_speed.resolved_variation(cfg.gpu_variation, topo.node.gpu.arch > 0)
    speed = gpu_speed.speed_factors(topo.n_gpus, cfg.seed, variation)
    shapes = _ShapeTimes(cfg, topo, model)
    jitter = _jitter(cfg, topo, model, measured, shapes, 1 if each or apart else cfg.accumulate, speed)
    param = param_factors(cfg.jitter, jitter, speed)
    classes = with_jitter(rank_classes(topo.n_gpus, topo.gpus_per_node, cfg.straggler), jitter, param)
    compute_source += seq_as_mean_label(cfg, model.seq)
    if measured is not None and cfg.straggler and cfg.straggler == measured.slowest_rank(topo.n_gpus):
        compute_source += (f"; straggler {cfg.straggler}: the trace's measured rank skew (its steps end "
                           f"with their slowest rank, its layer times are rank 0's)")
    if variation > 0:
        compute_source += f"; {gpu_speed.label(variation)}"
    factors, published = interference.resolved(cfg, measured, topo)
    if published and topo.n_gpus > 1:
        compute_source += f"; {interference.label(factors['interference'])}"
    curves = measured.collective_curves() if measured is not None else None
    used = False
    if curves:
        used, label = _measured_curves_label(curves, trace.source, topo.n_gpus)
        compute_source += f"; {label}"
    collectives = CollectiveModel(topo, algo=cfg.nccl_algo, proto=cfg.nccl_proto, measured=curves,
                                  nccl_version=cfg.nccl_version, nccl_env=NcclEnv(tuple(cfg.nccl_env)),
                                  flags=("--nccl-algo", "--nccl-proto"))
    compute_source += f"; {'other ' if used else ''}collectives: NCCL {collectives.release} model"
    for note in collectives.notes:
        compute_source += f"; {note}"
    if collectives.consts.env:
        compute_source += f"; NCCL env {collectives.consts.env}"
    if ctx.grad_compress.on:
        compute_source += f"; {ctx.grad_compress.label(model, topo.n_gpus)}"
    if dp == 1 and topo.n_gpus == tp.size and not splan.host_sync:
        compute_source += f"; {one_gpu_label(cfg, tp.on, strategy, ctx)}"
    if cfg.untie_outputs and not any(ls.kind == "output_projection" and "tied" in ls.params
                                     for ls in load_spec(cfg.model).layers):
        compute_source += f"; --untie-outputs has no effect: {model.name} ties no output projection"
    ranks = tuple(range(topo.n_gpus))
    kinds = {kind: topo.link_ids_of_kind(kind) for kind in topo.link_kinds_in_order()}
    groups = tp_groups(topo.n_gpus, tp.size) if tp.on or cp.on else None
    if tp.on:
        blocks = sum(1 for l in model.layers if l.kind in BLOCK_KINDS)
        compute_source += f"; {tp.label(blocks, model.dtype)}"
    if cp.on:
        groups[CP_CHANNEL] = cp_groups(topo.n_gpus, tp.size, cp.size)
    staged = None
    if pp.on:
        staged = pipelined(ctx, pp, cfg.accumulate, strategy, scheduler, classes, topo.n_gpus,
                           single_gpu_update_time, tied)
        plan, classes, groups = staged.plan, staged.classes, staged.groups
        splan = replace(splan, memory=staged.memory)

    def group_size(r) -> int:
        if is_pp_channel(r.channel):
            # stage pairs (sends, the tied embedding's gradient); the norm: one replica
            return 2 if r.op == "sendrecv" or r.name == "pp:embedding-grads" else tp.size * pp.size
        family = channel_family(r.channel)      # a pipeline stage's own "tp@s<s>" is "tp"
        if family == CP_CHANNEL:
            return cp.size
        return tp.size if family == TP_CHANNEL else dp

    def run_engine(plan):
        engine = Engine(plan, scheduler, classes, collectives,
                        lambda env: Network(env, topo.capacity), ranks,
                        iterations=cfg.iterations, groups=groups, **factors)
        run = engine.run()
        # a PS push/pull's size is what one worker sends or receives
        return run, step_metrics(run, lambda r: r.nbytes * (1.0 if r.op in SERVER_OPS else busbw_factor(r.op, group_size(r))),
                                 kinds, topo.capacity)

    run, metrics = run_engine(plan)
    # the data-parallel wrapper's gradient buckets, held as the scheduler's `ddp` style holds
    # them (schedulers.ddp_passes: PyTorch DDP's flat bucket tensors, apex's copies in flight)
    if staged is not None:
        splan = replace(splan, memory=staged.memory_with_buckets(run))
    elif plan.bucket_memory is not None:
        held = plan.bucket_memory
        splan = replace(splan, memory=splan.memory.with_buffer(held.name, held.bytes_held(run)))
    if collectives.beyond_measured:
        compute_source += "; " + beyond_measured_label(collectives)
    if staged is not None:
        compute_source += "; " + pipeline_label(pp, cfg.accumulate, run, staged.stage_of,
                                                metrics.step_time, staged.act_bytes)
    if cp.on:
        # a pipeline simulates the step's every micro-batch; otherwise one of them apart
        compute_source += "; " + cp_label(model, run, cfg.accumulate > 1 and not pp.on)
    split = None          # (plain, updating) micro-batch times, where simulated apart
    if apart:
        # a micro-batch before the last: its TP collectives and any strategy transfer a
        # forward or backward waits for (FSDP's gathers), no gradient synchronisation
        plain_plan = replace(without_update(splan, master_accumulate_s(ctx, cfg.amp)),
                             sync=tuple(t for t in splan.sync if t.needed_by is not None
                                        and strategy.gathers_every_micro_batch))
        # no gradient bucket in it, so nothing for --grad-compress to cast (or to refuse)
        plain_ctx = replace(ctx, grad_compress=GradCompress())
        _, plain = run_engine(build_step_plan(plain_ctx, plain_plan, strategy, scheduler))
        split = (plain.step_time, metrics.step_time)
        metrics = combine_micro_batches(plain, metrics, cfg.accumulate)
    elif each:
        plain_plan = without_update(splan, master_accumulate_s(ctx, cfg.amp))
        _, plain = run_engine(build_step_plan(ctx, plain_plan, strategy, scheduler))
        split = (plain.step_time, metrics.step_time)
        metrics = combine_micro_batches(plain, metrics, cfg.accumulate)

    samples_per_s = replicas * model.batch * cfg.accumulate / metrics.step_time
    fill = _token_fill(cfg, model)
    tokens_per_s = samples_per_s * model.sample_seq * (fill or 1.0)
    if cfg.throughput == "iterations":
        plain_s, last_s = split or _folded_split(metrics.step_time, one_micro_batch, jitter, param, cfg)
        samples_per_s, tokens_per_s = _iteration_mean(cfg, topo, model, speed, shapes, plain_s, last_s, dp)
        compute_source += f"; {iteration_rate.LABEL}"
    efficiency = None
    accumulates = global_batch_note(cfg, model.batch, replicas)
    notes = (plan.notes + accumulated_rows_note(cfg, splan.sync, each) + accumulates
             + unauthored_pairing_note(cfg) + unused_flag_notes(cfg, load_spec(cfg.model)))
    if cfg.efficiency_baseline and replicas > 1:
        # the same node type with one GPU (no communication); with tensor parallelism one
        # TP group on one node (its own collectives, no data-parallel ones); with pipeline
        # parallelism one replica's TP x P GPUs (x C with context parallelism), on as few
        # nodes as hold them
        replica = tp.size * pp.size * cp.size
        per_node = min(replica, topo.gpus_per_node)
        if replica % per_node == 0:
            single = _simulate(replace(cfg, straggler=None, efficiency_baseline=False),
                               Topology(topo.node, replica // per_node, per_node, topo.preset),
                               model, trace, tied)
            efficiency = samples_per_s / (replicas * single.samples_per_s)
            notes += superlinear_note(efficiency, metrics.compute, single.compute, dp, cfg)
    # one replica: the strategy's and scheduler's remarks are about synchronisation that
    # does not run (an "AllReduced densely" table, FSDP's units), so none is kept but those
    # of tables in host memory, whose copies and CPU update still run, and why it accumulates
    if dp == 1:
        notes = tuple(splan.host_notes) + accumulates
    return SimulationResult(
        config=cfg, cluster=ClusterShape.of(topo), model=model.name, metrics=metrics,
        samples_per_s=samples_per_s, tokens_per_s=tokens_per_s,
        memory=splan.memory, hbm_bytes=ctx.hbm_bytes, compute_source=compute_source,
        events=run.sim_events, wall_s=time.perf_counter() - wall0,
        scaling_efficiency=efficiency, notes=notes, run=run, link_caveats=strategy.link_caveats(),
        workload={"batch": model.batch, "seq": model.sample_seq, "dtype": model.dtype,
                  "amp": cfg.amp if model.dtype in ("bf16", "fp16", "fp8") else None,
                  # dense parameters and embedding tables wider than the model (FP32 under autocast)
                  "params": "fp32" if model.dense_param_bytes > model.dtype_bytes else None,
                  "tables": "fp32" if model.table_bytes > model.dtype_bytes else None,
                  "accumulate": cfg.accumulate, "accumulate_sync": cfg.accumulate_sync,
                  "throughput": cfg.throughput, "jitter": cfg.jitter,
                  "lengths": cfg.lengths, "token_fill": fill,
                  "padding": cfg.padding if _pads(cfg) else None,
                  "straggler": cfg.straggler, "seed": cfg.seed,
                  "gpu_variation": variation, "optimizer": model.optimizer.name,
                  **({"untie_outputs": True} if cfg.untie_outputs else {}),
                  # only when on: a data-parallel run's workload (and its JSON) is as before
                  **({"tensor_parallel": tp.size, "sequence_parallel": tp.sequence} if tp.on else {}),
                  **({"pipeline_parallel": pp.size} if pp.on else {}),
                  **({"virtual_pipeline": pp.virtual} if pp.interleaved else {}),
                  **({"p2p_overlap": False} if pp.overlap is False else {}),
                  **({"context_parallel": cp.size} if cp.on else {}),
                  **({"context_parallel_impl": cp.impl} if cp.on and cp.torch else {})})


def _measured_curves_label(curves, source: str, n_gpus: int) -> tuple[bool, str]:
    """(whether a measured curve is used, the label): a trace's curve replaces the model
    only for its own op at its own rank count (CollectiveModel), so a curve measured on
    another number of ranks is named as not used rather than claimed."""
    def ops(keys):
        return ", ".join(f"{op} at {n} ranks" for op, n in sorted(keys))
    here = [k for k in curves if k[1] == n_gpus]
    if here:
        text = f"collectives: measured ({source}: {ops(here)})"
        elsewhere = [k for k in curves if k[1] != n_gpus]
        if elsewhere:
            text += f"; not used: its curves for other rank counts ({ops(elsewhere)})"
        return True, text
    return False, (f"collectives: {source}'s measured curves ({ops(curves)}) are not for this run's "
                   f"{n_gpus} ranks: not used")


def beyond_measured_label(collectives) -> str:
    """Which measured curves the run asked for beyond their largest swept size (timed there
    at the last point's bandwidth), and how far."""
    parts = [f"{op} at {n} ranks up to {size / 2**20:,.1f} MiB (swept to "
             f"{max(collectives.measured[(op, n)][0]) / 2**20:,.1f} MiB)"
             for (op, n), size in sorted(collectives.beyond_measured.items())]
    return ("measured curves asked beyond their swept sizes, timed at the last point's "
            "bandwidth: " + ", ".join(parts))


def _folded_split(step_s: float, one, jitter, param, cfg: SimulationConfig) -> tuple[float, float]:
    """(plain, updating) micro-batch times of a step whose K-1 plain micro-batches were
    folded into one simulated step: those are compute only, on the slowest GPU."""
    slowest = int(np.argmax(jitter))
    plain_s = (float(jitter[slowest]) * (sum(one.layer_fwd.values()) + sum(one.layer_bwd.values()))
               + float(param[slowest]) * master_accumulate_s(one, cfg.amp))
    return plain_s, step_s - (cfg.accumulate - 1) * plain_s


class _ShapeTimes:
    """The run's model at other micro-batch shapes (batch, seq) on the run's GPU (the kernel
    model), each shape built and timed once per simulation (--jitter's length forms and the
    mean of per-iteration rates ask for the same padded lengths): forward + backward
    seconds of the whole model, or of an encoder-decoder's source and target sides."""

    def __init__(self, cfg: SimulationConfig, topo: Topology, model):
        from ..workload.gpu_compute import for_gpu
        self._cfg, self._model, self._gpu = cfg, model, for_gpu(topo.node.gpu)
        self._times: dict[tuple[int, int], tuple] = {}

    def _at(self, batch: int, seq: int) -> tuple:
        """(the model at that shape, its per-layer times)."""
        if (batch, seq) not in self._times:
            from ..workload.compute import model_times
            cfg = self._cfg
            m = load_model(cfg.model, batch=batch, seq=seq, untie_outputs=cfg.untie_outputs,
                           dtype=self._model.dtype, overrides=cfg.model_overrides, amp=cfg.amp,
                           recompute=cfg.recompute, tensor_parallel=self._model.tensor_parallel,
                           positions=False)
            self._times[(batch, seq)] = (m, model_times(m, self._gpu))
        return self._times[(batch, seq)]

    def total(self, batch: int, seq: int) -> float:
        """One micro-batch's forward + backward seconds at (batch, seq)."""
        return sum(t.fwd_s + t.bwd_s for t in self._at(batch, seq)[1].values())

    def at_seq(self, seq: int) -> float:
        """total() at the run's batch."""
        return self.total(self._model.batch, seq)

    def sides(self, batch: int, source: int, target: int) -> float:
        """Source-side layers at length `source` plus target-side layers at `target`."""
        return self._side(batch, source, 0) + self._side(batch, target, 1)

    def _side(self, batch: int, seq: int, side: int) -> float:
        m, times = self._at(batch, seq)
        cut = source_layers(m)
        names = {l.name for l in (m.layers[:cut] if side == 0 else m.layers[cut:])}
        return sum(t.fwd_s + t.bwd_s for n, t in times.items() if n in names)


def _iteration_mean(cfg: SimulationConfig, topo: Topology, model, speed, shapes: _ShapeTimes,
                    plain_s: float, last_s: float, dp: int) -> tuple[float, float]:
    """(samples/s, tokens/s) as the mean of per-iteration rates (engine.iteration_rate);
    `dp`: the model replicas."""
    m, r = iteration_rate.step_profile(cfg.jitter, topo.n_gpus, cfg.seed, model.batch, model.seq,
                                       shapes.at_seq, cfg.corpus, cfg.lengths, speed)
    c = shapes.at_seq(model.seq)
    nominal = dp * model.batch
    return (nominal * iteration_rate.mean_rate(plain_s, last_s, cfg.accumulate, c, m, np.ones_like(r)),
            nominal * model.seq * iteration_rate.mean_rate(plain_s, last_s, cfg.accumulate, c, m, r))


def _token_fill(cfg: SimulationConfig, model) -> float | None:
    """--jitter maxtokens: the share of the --batch x --seq budget that is real target
    tokens (what fairseq counts as tokens); None otherwise (every token counted)."""
    spec = parse_jitter(cfg.jitter)
    if spec is None or spec[0] != "maxtokens":
        return None
    return budget_fill(cfg.corpus, cfg.lengths, cfg.seed, model.batch * model.seq)


def _pads(cfg: SimulationConfig) -> bool:
    """Whether the run's batches are padded to other lengths than --seq (engine.padded)."""
    policy = parse_padding(cfg.padding)
    return policy is not None and policy.kind != "max"


def _jitter(cfg: SimulationConfig, topo: Topology, model, measured, shapes: _ShapeTimes,
            micro_batches: int = 1, speed=None):
    """Per-rank compute factors of --jitter at each GPU's `speed` (gpu_speed; the speeds
    alone without --jitter); `shapes` times the model at other shapes."""
    if not cfg.jitter:
        return jitter_factors(None, topo.n_gpus, cfg.seed, speed=speed)
    skew = measured.trace.rank_skew if measured is not None else None
    return jitter_factors(cfg.jitter, topo.n_gpus, cfg.seed, seq=model.seq,
                          compute_at_seq=shapes.at_seq, compute_at=shapes.total,
                          corpus=cfg.corpus, lengths=cfg.lengths, batch=model.batch,
                          micro_batches=micro_batches, compute_sides=shapes.sides,
                          trace_skew=skew.factor if skew is not None else None, speed=speed)


def source_layers(model) -> int:
    """How many of an encoder-decoder's layers read the source: those before its second
    embedding layer when an encoder runs in between (source embedding, encoder; then the
    target embedding, decoder, head). 0 otherwise (one embedding, or side-by-side input
    embeddings such as BERT's): every layer is on the one side."""
    emb = [i for i, layer in enumerate(model.layers) if layer.kind == "embedding"]
    if len(emb) < 2 or all("embedding" in layer.kind for layer in model.layers[emb[0]:emb[1]]):
        return 0
    return emb[1]


def single_gpu_update_time(ctx, dense_table_gradient: bool) -> dict:
    """Optimizer seconds per layer of single-GPU training: dense layers whole; embedding
    tables only on the rows the batch touched where the gradient is sparse (a strategy
    whose lookups leave (index, row) pairs, e.g. nn.Embedding(sparse=True), and no dense
    softmax tied to the table), otherwise whole. `dense_table_gradient`: the strategy's
    trait, the same that picks the lookups' dense backward kernel (step_context): the
    allreduce strategy is DDP over nn.Embedding(sparse=False), whose one-GPU run (world
    size 1, as DeepLearningExamples' GNMT and NCF run it) scatter-adds into a dense
    vocab x dim gradient that torch.optim / apex Adam then steps in every row."""
    out = {}
    for layer in ctx.model.layers:
        if layer.params <= 0:
            continue
        traffic = ctx.tables.get(layer.name)
        if traffic is not None and not traffic.dense_grad and not dense_table_gradient:
            out[layer.name] = ctx.sparse_update(layer.name, traffic.unique_per_gpu,
                                                traffic.lookups_per_gpu)
        else:
            out[layer.name] = ctx.layer_update[layer.name]
    return out


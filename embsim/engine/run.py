"""simulate(config) -> SimulationResult: the whole pipeline of one training-step
simulation, from names and files to figures. Used by `embsim simulate`, `compare`,
`sweep`, `scale` and `validate`."""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass, field, replace

from ..collectives import CollectiveModel
from ..collectives.busbw import busbw_factor
from ..errors import InputError
from ..network import Network
from ..schedulers import SCHEDULERS
from ..strategies import STRATEGIES
from ..topology import Topology, load_topology
from ..trace import load_trace
from ..workload import load_model
from .build import build_step_plan
from .classes import rank_classes
from .context import step_context
from .metrics import step_metrics
from ..plan.timeline import EngineRun
from .simulation import Engine


@dataclass(frozen=True)
class SimulationConfig:
    topology: str = "16x8"
    model: str = "lstm-lm1b"
    batch: int | None = None
    seq: int | None = None
    strategy: str = "allreduce"
    scheduler: str = "fifo"
    strategy_options: dict = field(default_factory=dict)
    scheduler_options: dict = field(default_factory=dict)
    iterations: int = 4
    seed: int = 0
    trace: str | None = None
    straggler: str | None = None
    # compute slowdown f while a collective runs, and collective slowdown g while compute
    # runs; None: measured (the trace's, on its own topology, else the topology's
    # fabric.interference / comm_interference), 0 where nothing was measured
    interference: float | None = None
    comm_interference: float | None = None
    zipf_s: float = 1.05
    corpus: str | None = None
    nccl_algo: str | None = None
    nccl_proto: str | None = None
    hardware: dict = field(default_factory=dict)   # what-ifs: nic_gbit, nvlink_gbps, oversubscription
    efficiency_baseline: bool = True               # also simulate 1 GPU for scaling efficiency
    untie_outputs: bool = False                    # tied output projections get their own weight


@dataclass
class SimulationResult:
    config: SimulationConfig
    topology: dict
    model: str
    strategy: str
    scheduler: str
    n_gpus: int
    step_time: float
    samples_per_s: float
    tokens_per_s: float
    compute: float
    exposed_comm: float
    comm_bytes_per_gpu: dict
    comm_time: dict
    link_utilisation: dict
    memory: dict
    hbm_bytes: float
    fits_in_memory: bool
    compute_source: str
    events: int
    wall_s: float
    scaling_efficiency: float | None
    notes: tuple = ()
    run: EngineRun | None = None

    @property
    def busiest_link(self) -> tuple[str, float, float] | None:
        if not self.link_utilisation:
            return None
        kind = max(self.link_utilisation, key=lambda k: self.link_utilisation[k][1])
        mean, peak = self.link_utilisation[kind]
        return kind, mean, peak

    def as_json(self) -> dict:
        busiest = self.busiest_link
        return {
            # the resolved file is machine-specific (where the checkout lies): shown by the
            # text summary, kept out of the JSON so results compare across machines
            "topology": {k: v for k, v in self.topology.items() if k != "file"},
            "model": self.model,
            "strategy": self.strategy,
            "scheduler": self.scheduler,
            "step_time_ms": self.step_time * 1e3,
            "samples_per_s": self.samples_per_s,
            "tokens_per_s": self.tokens_per_s,
            "compute_ms": self.compute * 1e3,
            "exposed_comm_ms": self.exposed_comm * 1e3,
            "comm_bytes_per_gpu": self.comm_bytes_per_gpu,
            "memory_per_gpu_bytes": self.memory["total"],
            "memory_breakdown_bytes": self.memory,
            "hbm_bytes": self.hbm_bytes,
            "fits_in_memory": self.fits_in_memory,
            "compute_source": self.compute_source,
            "events": self.events,
            "wall_s": self.wall_s,
            "scaling_efficiency": self.scaling_efficiency,
            "busiest_link": None if busiest is None else
                {"kind": busiest[0], "mean_utilisation": busiest[1], "max_utilisation": busiest[2]},
            "notes": list(self.notes),
        }


def simulate(cfg: SimulationConfig) -> SimulationResult:
    if cfg.iterations < 2:
        raise InputError(f"--iterations {cfg.iterations}: need at least 2 (the first is warm-up)")
    topo = load_topology(cfg.topology)
    if cfg.hardware:
        topo = topo.with_overrides(**cfg.hardware)
    model = load_model(cfg.model, batch=cfg.batch, seq=cfg.seq, untie_outputs=cfg.untie_outputs)
    trace = load_trace(cfg.trace) if cfg.trace else None
    return _simulate(cfg, topo, model, trace)


def _simulate(cfg: SimulationConfig, topo: Topology, model, trace) -> SimulationResult:
    wall0 = time.perf_counter()
    strategy_cls, scheduler_cls = STRATEGIES.get(cfg.strategy), SCHEDULERS.get(cfg.scheduler)
    _check_options(cfg, strategy_cls, scheduler_cls)
    strategy = strategy_cls(**cfg.strategy_options)
    scheduler = scheduler_cls(**cfg.scheduler_options)
    scheduler.check(strategy)

    ctx, compute_source = step_context(model, topo, trace, cfg)
    splan = strategy.plan(ctx)
    if topo.n_gpus == 1:
        # One GPU synchronises nothing: every strategy is plain single-GPU training
        # (sparse embedding updates where the table allows them) and steps alike.
        splan = replace(splan, sync=(), extra=(), update_time=single_gpu_update_time(ctx))
    plan = build_step_plan(ctx, splan, scheduler)
    classes = rank_classes(topo.n_gpus, topo.gpus_per_node, cfg.straggler)
    measured = _measured_curves(trace, topo)
    if measured:
        compute_source += f"; collectives: measured ({trace.source}: {', '.join(sorted({op for op, _ in measured}))})"
    collectives = CollectiveModel(topo, algo=cfg.nccl_algo, proto=cfg.nccl_proto, measured=measured)
    ranks = tuple(range(topo.n_gpus))
    engine = Engine(plan, scheduler, classes, collectives,
                    lambda env: Network(env, topo.capacity), ranks,
                    iterations=cfg.iterations, **resolved_interference(cfg, trace, topo))
    run = engine.run()
    kinds = {kind: topo.link_ids_of_kind(kind) for kind in dict.fromkeys(l.kind for l in topo.links)}
    metrics = step_metrics(run, lambda r: r.nbytes * busbw_factor(r.op, topo.n_gpus), kinds, topo.capacity)

    samples_per_s = topo.n_gpus * model.batch / metrics.step_time
    memory = splan.memory.as_dict()
    hbm = ctx.hbm_bytes
    efficiency = None
    if cfg.efficiency_baseline and topo.n_gpus > 1:
        # the same node type with one GPU (no communication)
        single = _simulate(replace(cfg, straggler=None, efficiency_baseline=False),
                           Topology(topo.node, 1, 1, topo.preset), model, trace)
        efficiency = samples_per_s / (topo.n_gpus * single.samples_per_s)
    return SimulationResult(
        config=cfg,
        topology={"preset": topo.preset, "nodes": topo.n_nodes,
                  "gpus_per_node": topo.gpus_per_node, "gpus": topo.n_gpus,
                  "file": topo.node.source},   # which file the name resolved to
        model=model.name, strategy=cfg.strategy, scheduler=cfg.scheduler, n_gpus=topo.n_gpus,
        step_time=metrics.step_time, samples_per_s=samples_per_s,
        tokens_per_s=samples_per_s * model.seq,
        compute=metrics.compute, exposed_comm=metrics.exposed_comm,
        comm_bytes_per_gpu=metrics.comm_bytes_per_gpu, comm_time=metrics.comm_time,
        link_utilisation=metrics.link_utilisation, memory=memory, hbm_bytes=hbm,
        fits_in_memory=memory["total"] <= hbm, compute_source=compute_source,
        events=run.sim_events, wall_s=time.perf_counter() - wall0,
        scaling_efficiency=efficiency, notes=plan.notes, run=run)


def _named_parameters(cls) -> set[str]:
    sig = inspect.signature(cls.__init__)
    return {n for n, p in sig.parameters.items()
            if n != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _check_options(cfg, strategy_cls, scheduler_cls) -> None:
    """--option keys go to both constructors; one that neither names is a typo."""
    known = _named_parameters(strategy_cls) | _named_parameters(scheduler_cls)
    given = list(dict.fromkeys([*cfg.strategy_options, *cfg.scheduler_options]))
    unknown = [k for k in given if k not in known]
    if unknown:
        raise InputError(f"--option {unknown[0]}: neither strategy {cfg.strategy} nor scheduler "
                         f"{cfg.scheduler} takes it (they take: {', '.join(sorted(known)) or 'nothing'})")


def single_gpu_update_time(ctx) -> dict:
    """Optimizer seconds per layer of single-GPU training: dense layers whole, embedding
    tables only on the rows the batch touched (unless a dense softmax makes them dense)."""
    out = {}
    for layer in ctx.model.layers:
        if layer.params <= 0:
            continue
        traffic = ctx.tables.get(layer.name)
        if traffic is not None and not traffic.dense_grad:
            out[layer.name] = ctx.sparse_update(layer.name, traffic.unique_per_gpu)
        else:
            out[layer.name] = ctx.layer_update[layer.name]
    return out


def resolved_interference(cfg, trace, topo) -> dict:
    """The engine's interference factors: each flag if given, else what was measured for
    this machine — the trace's own measurement on the topology it was captured on, else
    the topology's fabric.interference / comm_interference — else 0."""
    measured = None
    if trace is not None and trace.interference is not None and _on_trace_topology(trace, topo):
        measured = (trace.interference.compute_factor, trace.interference.comm_factor)
    fabric = topo.node.fabric
    out = {}
    for key, given, i in (("interference", cfg.interference, 0),
                          ("comm_interference", cfg.comm_interference, 1)):
        if given is not None:
            out[key] = given
        elif measured is not None:
            out[key] = measured[i]
        else:
            out[key] = getattr(fabric, key) or 0.0
    return out


def _on_trace_topology(trace, topo) -> bool:
    return not trace.topology or trace.topology.rsplit("/", 1)[-1].removesuffix(".yaml") == topo.preset


def _measured_curves(trace, topo):
    """A trace's measured collective curves replace the model only on the topology the
    trace was captured on (same preset and rank count)."""
    if trace is None or not trace.collectives:
        return None
    if not _on_trace_topology(trace, topo):
        return None
    return {(c.op, c.ranks): (c.sizes, c.median_s) for c in trace.collectives if c.scope == "all"}

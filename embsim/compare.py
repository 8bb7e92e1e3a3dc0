"""The strategy x scheduler matrix: simulate every combination of one configuration,
rank by step time, speedup over the allreduce/fifo baseline (PyTorch DDP).

Combinations a scheduler refuses (Scheduler.check) are listed as refused with the
reason, never silently dropped; ones that do not fit in HBM are flagged, ranked after
the ones that fit. Rows whose simulated timelines are identical ran one plan under several
names (e.g. sparse strategies on a model whose only table is dense all run allreduce's) and
are marked as that plan, not ranked as rivals. Runs in at most 2 worker processes (the
simulations are independent).
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ProcessPoolExecutor
from dataclasses import astuple, dataclass, replace
from typing import Any, Mapping

from .engine.config import with_options
from .engine.options_used import DEFAULT, value_text
from .engine.result import most_first
from .engine.run import SimulationConfig, simulate
from .errors import InputError, ModelNotSupported
from .lifetime import die_with_parent
from .options import build_options, route
from .schedulers import SCHEDULERS
from .strategies import STRATEGIES

BASELINE = ("allreduce", "fifo")
MAX_WORKERS = 2
# How far apart two simulated steps must be before the model can order them: the mean
# |simulated/measured - 1| of `embsim validate --training` over the packaged published runs
# (76 runs, docs/validation.md). A row whose step is within this fraction of the best is
# within the model's demonstrated error of it: the order between them is not resolved.
# tests/validate/test_training.py recomputes it from the validation, so it cannot go stale.
TRAINING_MEAN_ERROR = 0.062


@dataclass(frozen=True)
class CompareRow:
    strategy: str
    scheduler: str
    step_time: float | None = None           # s
    exposed_comm: float | None = None        # s
    compute: float | None = None             # s
    # s of `compute` slowed by collectives in flight (interference): communication's cost
    compute_stretch: float = 0.0
    net_bytes_per_node: float | None = None  # sent into the network a step per node (None: one node)
    comm_bytes_per_gpu: float | None = None  # bytes sent per GPU per step, all collectives
    memory_per_gpu: float | None = None      # bytes
    hbm_bytes: float | None = None           # the GPU's
    # what a node's host memory holds for the strategy (workload.host_memory.HostMemoryNeed)
    host_memory: Any = None
    fits_in_memory: bool | None = None
    refused: str | None = None               # why the combination was not run
    speedup: float | None = None             # baseline step / this step
    notes: tuple = ()
    compute_source: str = ""                 # measured (trace) or "compute: kernel model ..."
    n_gpus: int = 0
    # (link kind, the kind's links' mean, its hottest link's) utilisation: each link's bytes
    # over its capacity x the steady state, a step average, not a peak in time
    busiest_link: tuple | None = None
    collectives: float | None = None         # collectives per step, all ops
    comm_wall: float | None = None           # s per step with at least one collective running
    exposed_by_op: tuple = ()                # ((op, s per step waited on it), ...), most first
    comm_bytes_by_op: tuple = ()             # ((op, bytes sent per GPU per step), ...) by op name
    collectives_by_op: tuple = ()            # ((op, collectives per step), ...) by op name
    # digest of the simulated timeline (every collective's bytes and times, every compute op)
    # and memory: rows with one digest ran the same plan, whatever their strategy's name
    plan: str = ""
    same_plan_as: str | None = None          # label of the first ranked row with this plan
    cluster: Any = None                      # engine.result.ClusterShape of the run
    workload: tuple = ()                     # the run's workload (batch, seq, dtype, seed...) as items
    options: Any = None                      # engine.options_used.OptionsUsed (None: refused)
    # ((link kind, what its capacity rests on that nobody measured), ...): Strategy.link_caveats
    link_caveats: tuple = ()

    @property
    def comm_rate(self) -> float | None:
        """Bytes a GPU sends per second of the step during which any collective runs:
        small or latency-bound collectives run far below the links' rate, big ones near it."""
        if not self.comm_wall or self.comm_bytes_per_gpu is None:
            return None
        return self.comm_bytes_per_gpu / self.comm_wall

    @property
    def label(self) -> str:
        return f"{self.strategy}/{self.scheduler}"


@dataclass(frozen=True)
class CompareResult:
    config: SimulationConfig
    rows: tuple[CompareRow, ...]     # ranked: fitting by step time, then not fitting, then refused
    baseline: str = "/".join(BASELINE)
    n_gpus: int = 0

    @property
    def compute_source(self) -> str:
        """Where the compute times came from (the same for every row of one matrix)."""
        return next((r.compute_source for r in self.rows if r.compute_source), "")

    @property
    def ran_baseline(self) -> CompareRow | None:
        """The baseline's row if it ran: its cluster and workload are the matrix's."""
        return next((r for r in self.rows if r.label == self.baseline and r.refused is None), None)


def parse_names(text: str | None, registry, flag: str) -> list[str]:
    """'a,b' -> ['a', 'b'] checked against the registry; None/'' -> every registered name."""
    if not text:
        return registry.names()
    names = [n.strip() for n in text.split(",") if n.strip()]
    for n in names:
        if n not in registry.names():
            raise InputError(f"{flag}: unknown {registry.what} {n!r} (known: {', '.join(registry.names())})")
    if not names:
        raise InputError(f"{flag}: empty list")
    return list(dict.fromkeys(names))


def refusal(cfg: SimulationConfig) -> str | None:
    try:
        st = STRATEGIES.get(cfg.strategy).from_options(cfg.strategy_options)
        SCHEDULERS.get(cfg.scheduler).from_options(cfg.scheduler_options).check(st)
    except InputError as e:
        return str(e)
    return None


def plan_digest(run, memory_total: float) -> str:
    """Same digest, same plan: every collective (op, bytes, channel, algorithm, times),
    compute op and wait of the simulated timeline, and the memory per GPU."""
    h = hashlib.sha256()
    for records in (run.classes, run.comm, run.compute, run.waits):
        for rec in records:
            h.update(repr(astuple(rec)).encode())
    h.update(repr((sorted(run.iteration_end.items()), memory_total)).encode())
    return h.hexdigest()[:16]


def run_one(cfg: SimulationConfig) -> CompareRow:
    """One cell of the matrix (top level, so worker processes can pickle it); a strategy
    that cannot run the model comes back refused, with its reason."""
    try:
        r = simulate(cfg)
    except ModelNotSupported as e:
        return CompareRow(strategy=cfg.strategy, scheduler=cfg.scheduler, refused=str(e))
    return CompareRow(strategy=cfg.strategy, scheduler=cfg.scheduler, step_time=r.step_time,
                      exposed_comm=r.exposed_comm, compute=r.compute, compute_stretch=r.compute_stretch,
                      net_bytes_per_node=r.net_bytes_per_node,
                      comm_bytes_per_gpu=float(sum(r.comm_bytes_per_gpu.values())),
                      memory_per_gpu=float(r.memory.total), hbm_bytes=r.hbm_bytes,
                      host_memory=r.memory.host, fits_in_memory=r.fits_in_memory,
                      notes=tuple(r.notes), compute_source=r.compute_source, n_gpus=r.n_gpus,
                      busiest_link=r.busiest_link, collectives=float(sum(r.comm_count.values())),
                      comm_wall=r.comm_wall,
                      exposed_by_op=tuple(most_first(r.exposed_by_op)),
                      comm_bytes_by_op=tuple(sorted(r.comm_bytes_per_gpu.items())),
                      collectives_by_op=tuple(sorted(r.comm_count.items())),
                      plan=plan_digest(r.run, float(r.memory.total)) if r.run is not None else "",
                      cluster=r.cluster, workload=tuple(r.workload.items()), options=r.options_used,
                      link_caveats=tuple(sorted(r.link_caveats.items())))


def split_scoped(options: Mapping[str, Any]) -> tuple[dict, dict]:
    """(plain keys, {component name: its NAME.KEY=VALUE keys}); a NAME that is no
    strategy or scheduler is refused."""
    plain, scoped = {}, {}
    for key, value in options.items():
        if "." not in key:
            plain[key] = value
            continue
        name, sub = key.split(".", 1)
        # the CLI spells dashes in keys as underscores: embrace_2d.KEY is embrace-2d's
        known = {n.replace("-", "_"): n for n in [*STRATEGIES.names(), *SCHEDULERS.names()]}
        name = known.get(name.replace("-", "_"))
        if name is None:
            raise InputError(f"--option {key}: no strategy or scheduler is called {key.split('.', 1)[0]!r}")
        scoped.setdefault(name, {})[sub] = value
    return plain, scoped


def combination(base: SimulationConfig, strategy: str, scheduler: str,
                options: Mapping[str, Any] | None, combos=None) -> SimulationConfig:
    """The config of one cell. Plain keys go to the components that declare them (a key
    no compared component declares is refused); NAME.KEY=VALUE only to the strategy or
    scheduler called NAME (e.g. ps.servers=dedicated, embrace-2d.partition_bytes=8e6)."""
    plain, scoped = split_scoped(options or {})
    cfg = with_options(replace(base, strategy=strategy, scheduler=scheduler), plain, strict=False)
    return replace(cfg, strategy_options={**cfg.strategy_options, **scoped.get(strategy, {})},
                   scheduler_options={**cfg.scheduler_options, **scoped.get(scheduler, {})})


def compare(cfg: SimulationConfig, strategies: list[str], schedulers: list[str],
            workers: int = MAX_WORKERS, options: Mapping[str, Any] | None = None) -> CompareResult:
    """`options`: one --option bag; each combination gets the keys its strategy and its
    scheduler declare, and a key no compared component declares is refused."""
    base = replace(cfg, efficiency_baseline=False)
    combos = [(s, x) for s in strategies for x in schedulers]
    if BASELINE not in combos:
        combos.insert(0, BASELINE)
    plain, scoped = split_scoped(options or {})
    for name, keys in scoped.items():      # a mistyped NAME.KEY is an error, not a refusal
        registry = STRATEGIES if name in STRATEGIES.names() else SCHEDULERS
        build_options(registry.get(name).Options, keys, f"{registry.what} {name}")
    route(plain, {**{f"strategy {s}": STRATEGIES.get(s).Options for s, _ in combos},
                  **{f"scheduler {x}": SCHEDULERS.get(x).Options for _, x in combos}})
    configs = {(s, x): combination(base, s, x, options) for (s, x) in combos}
    refused = {c: refusal(configs[c]) for c in combos}
    todo = [configs[c] for c in combos if refused[c] is None]
    workers = max(1, min(workers, MAX_WORKERS, len(todo)))
    if workers == 1:
        done = [run_one(c) for c in todo]
    else:
        with ProcessPoolExecutor(max_workers=workers, initializer=die_with_parent) as pool:
            done = list(pool.map(run_one, todo))
    by_combo = {(r.strategy, r.scheduler): r for r in done}
    baseline = by_combo[BASELINE]
    rows = []
    for combo in combos:
        if refused[combo] is not None:
            rows.append(CompareRow(strategy=combo[0], scheduler=combo[1], refused=refused[combo]))
        elif by_combo[combo].refused is not None:
            rows.append(by_combo[combo])
        else:
            r = by_combo[combo]
            rows.append(replace(r, speedup=baseline.step_time / r.step_time))
    rows.sort(key=rank_key)
    return CompareResult(config=base, rows=same_plans(rows), n_gpus=baseline.n_gpus)


def same_plans(rows) -> tuple[CompareRow, ...]:
    """Rows (ranked) with a row of the same plan ranked before them marked same_plan_as it:
    one plan is one result, however many strategies' names it runs under (e.g. allgather,
    embrace and ps on a model whose only table is dense all run allreduce's plan)."""
    first: dict[str, str] = {}
    out = []
    for r in rows:
        if r.refused is None and r.plan:
            rep = first.setdefault(r.plan, r.label)
            if rep != r.label:
                r = replace(r, same_plan_as=rep)
        out.append(r)
    return tuple(out)


def best_fitting(rows) -> CompareRow | None:
    """The fastest row that ran and fits in memory (first by rank_key), else None."""
    ran = [r for r in rows if r.refused is None and r.fits_in_memory]
    return min(ran, key=rank_key) if ran else None


def trails_by(faster: CompareRow, slower: CompareRow) -> float:
    """How far `slower` trails `faster`, as a share of the faster row's step: the one
    measure the resolution line and the why:/slower: lines hold against the model's error
    (each had its own denominator, so a 6.5 % lead read resolved in one and not in the other)."""
    return (slower.step_time - faster.step_time) / faster.step_time


# Scheduler knobs the authors' systems tune per job (ByteScheduler searches its partition and
# credit sizes with Bayesian optimisation; P3's slice size is a flag): a lead won at their
# defaults can move with them (lstm-lm1b on 4x4 RTX 3090: ps/embrace-2d 15.6 % ahead at 64 MB,
# embrace-2d 2.4 % behind fifo at 32 MB, ahead at 16 MB).
TUNED_PER_JOB = ("partition_bytes", "credit_bytes")


def untuned_defaults(best) -> list[str]:
    """The best row's scheduler knobs that its authors tune per job, left at their defaults,
    as KEY=VALUE."""
    used = best.options.items if best.options is not None else ()
    return [f"{u.key}={value_text(u.value)}" for u in used
            if u.component == "scheduler" and u.key in TUNED_PER_JOB and u.source == DEFAULT]


def unresolved_with_best(rows, error: float = TRAINING_MEAN_ERROR) -> list[str]:
    """Labels of the other fitting rows, in the order given, whose step is within `error` of
    the best's (best_fitting): the model's validated error cannot tell them from the best.
    A row of a plan already ranked (same_plan_as) is that row's result, not another one."""
    best = best_fitting(rows)
    if best is None:
        return []
    return [r.label for r in rows if r is not best and r.refused is None and r.fits_in_memory
            and r.same_plan_as is None and trails_by(best, r) < error]


def rank_key(row: CompareRow):
    """Fitting first, by step time; among equal steps the baseline's strategy first, so that
    a plan it shares with others (a dense fallback) is ranked under its name."""
    if row.refused is not None:
        return (2, 0.0, 0, row.label)
    return (0 if row.fits_in_memory else 1, row.step_time, row.strategy != BASELINE[0], row.label)

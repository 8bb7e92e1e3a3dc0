"""Check every point of a grid before any runs: a typo in one value (a strategy name, a
model, an iteration count) is one line and exit 2 up front, not a failed row per point
after the whole sweep ran."""

from __future__ import annotations

import math

from ..errors import InputError
from ..workload.tokens import check_corpus_text
from .spec import CONFIG_FIELDS, MAX_SEED, SweepPoint

MAX_ITERATIONS = 1000          # as the --iterations flag (embsim.commands.checks)
MAX_ACCUMULATE = 1024          # as the --accumulate flag (embsim.commands.checks)


def check_config(cfg, seen: set, topology_origin: str = "--topology") -> None:
    """What simulate() would refuse before it starts simulating. `seen` caches the
    (kind, value) pairs already checked; `topology_origin` is what a topology error names
    (the flag, or a sweep file's key)."""
    from ..schedulers import SCHEDULERS
    from ..strategies import STRATEGIES
    from ..topology import load_topology
    from ..trace import load_trace
    from ..engine.classes import parse_straggler
    from ..engine.measured import MeasuredInputs
    from ..engine.run import with_model_defaults
    from ..engine.trace_defaults import apply_trace_defaults
    from ..workload import load_model
    from ..workload.tokens import MAX_ZIPF_S

    if not isinstance(cfg.iterations, int) or not 2 <= cfg.iterations <= MAX_ITERATIONS:
        raise InputError(f"iterations {cfg.iterations!r}: need an integer 2..{MAX_ITERATIONS} "
                         f"(the first is warm-up)")
    accumulate = getattr(cfg, "accumulate", 1)
    if isinstance(accumulate, int) and not isinstance(accumulate, bool) \
            and accumulate > MAX_ACCUMULATE:
        raise InputError(f"accumulate {accumulate!r}: need an integer 1..{MAX_ACCUMULATE}")
    if not isinstance(cfg.seed, int) or isinstance(cfg.seed, bool) or not 0 <= cfg.seed <= MAX_SEED:
        raise InputError(f"seed {cfg.seed!r}: need an integer 0..{MAX_SEED}")
    for key in ("interference", "comm_interference"):
        value = getattr(cfg, key)
        if value is not None and (not math.isfinite(value) or value < 0):
            raise InputError(f"{key} {value!r}: must be a finite number >= 0")
    if cfg.zipf_s is not None and not (math.isfinite(cfg.zipf_s) and 0 <= cfg.zipf_s <= MAX_ZIPF_S):
        # as --zipf takes it: a Zipf exponent, 0 for uniform
        raise InputError(f"zipf_s {cfg.zipf_s!r}: must be a Zipf exponent, 0 <= s <= {MAX_ZIPF_S:g}")
    def topology():
        topo = load_topology(cfg.topology, origin=topology_origin)
        return topo.with_overrides(**cfg.hardware) if cfg.hardware else topo

    def model():
        # as simulate() loads it: the model's defaults (dtype, amp) under the run's own
        merged = with_model_defaults(cfg)
        return load_model(merged.model, batch=merged.batch, seq=merged.seq,
                          untie_outputs=merged.untie_outputs, dtype=merged.dtype,
                          overrides=merged.model_overrides, amp=merged.amp, recompute=merged.recompute)

    def components():
        strategy = STRATEGIES.get(cfg.strategy).from_options(cfg.strategy_options)
        SCHEDULERS.get(cfg.scheduler).from_options(cfg.scheduler_options).check(strategy)

    def straggler():
        topo = topology()
        parse_straggler(cfg.straggler, topo.n_gpus, topo.gpus_per_node)

    def trace_fits():
        # layer times measured on another device do not transfer; without a kernel table to
        # fall back on, every layer of the model needs its own (engine.trace_times)
        trace = load_trace(cfg.trace)
        # simulate's refusal of a model the trace did not measure (spec.with_trace_defaults
        # gives a point without a model the trace's), for points made by hand too; the
        # trace's own value (a model file's path) is its model
        if cfg.model != trace.model:
            apply_trace_defaults(cfg, set(CONFIG_FIELDS))
        measured = MeasuredInputs.resolve(trace, topology())
        built = model()
        if measured is not None and measured.covers(built):
            missing = [l.name for l in built.layers
                       if l.name not in trace.layers and f"{l.name}:sparse" not in trace.layers]
            if missing:
                raise InputError(f"--trace {trace.source}: no timing for layer {missing[0]!r} of "
                                 f"{built.name} (trace is of {trace.model})")

    checks = [("components", (cfg.strategy, repr(cfg.strategy_options), cfg.scheduler,
                              repr(cfg.scheduler_options)), components),
              ("topology", (cfg.topology, tuple(sorted(cfg.hardware.items()))), topology),
              ("straggler", (cfg.topology, tuple(sorted(cfg.hardware.items())), cfg.straggler),
               lambda: cfg.straggler and straggler()),
              ("model", (cfg.model, cfg.batch, cfg.seq, cfg.untie_outputs, repr(cfg.model_overrides),
                         cfg.dtype, cfg.amp, cfg.recompute), model),
              ("trace", (cfg.trace, cfg.topology, tuple(sorted(cfg.hardware.items())), cfg.model,
                         cfg.batch, cfg.seq, cfg.untie_outputs, repr(cfg.model_overrides)),
               lambda: cfg.trace and trace_fits()),
              ("corpus", cfg.corpus, lambda: cfg.corpus and check_corpus_text(cfg.corpus)),
              ("trainer", (cfg.model, cfg.seq, cfg.jitter, cfg.lengths, cfg.padding, cfg.corpus),
               lambda: _trainer_inputs(cfg)),
              # tensor / pipeline / context parallelism against the point's topology, model and
              # each other, as simulate() refuses them (a size that divides no GPU count ran
              # every point to a failed row, and scale then exited 1, not 2)
              ("parallel", (cfg.topology, tuple(sorted(cfg.hardware.items())), cfg.model, cfg.batch,
                            cfg.seq, cfg.untie_outputs, repr(cfg.model_overrides), cfg.dtype, cfg.amp,
                            cfg.recompute, cfg.strategy, cfg.scheduler, cfg.tensor_parallel,
                            cfg.sequence_parallel, cfg.pipeline_parallel, cfg.context_parallel,
                            cfg.trace, cfg.jitter, cfg.padding, cfg.throughput, cfg.accumulate_sync),
               lambda: _parallel(cfg))]
    for kind, value, load in checks:
        key = (kind, repr(value))
        if key not in seen:
            load()
            seen.add(key)


def _trainer_inputs(cfg) -> None:
    """The model's trainer defaults merged as simulate() merges them (a padding that fits the
    seq, one padder), and a --jitter corpus form given sample lengths."""
    from ..engine.jitter import CORPUS_FORMS, parse_jitter
    from ..engine.run import with_model_defaults
    merged = with_model_defaults(cfg)
    jitter = parse_jitter(merged.jitter)
    if jitter is not None and jitter[0] in CORPUS_FORMS and not merged.lengths and not merged.corpus:
        raise InputError(f"jitter {merged.jitter}: needs sample lengths (corpus or lengths), "
                         f"and the model's defaults give none")


def _parallel(cfg) -> None:
    """A point with tensor, pipeline or context parallelism: simulate()'s own checks of it
    (engine.run.prepare); without, nothing to check beyond the model's load above."""
    if (cfg.tensor_parallel, cfg.pipeline_parallel, cfg.context_parallel) == (1, 1, 1) \
            and cfg.sequence_parallel is None:
        return
    from ..engine.run import prepare
    prepare(cfg)


def check_points(points: list[SweepPoint], what: str = "sweep",
                 topology_origin: str = "--topology") -> None:
    """Raise InputError naming the first point whose configuration cannot run."""
    from ..engine.config import SimulationConfig
    seen: set = set()
    for p in points:
        try:
            check_config(SimulationConfig(**p.config), seen, topology_origin)
        except (InputError, TypeError) as exc:
            raise InputError(f"{what} point {p.index}: {exc}") from None

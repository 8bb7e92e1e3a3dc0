"""Which parallelism combinations a run may ask for: tensor, pipeline and context
parallelism against the topology, each other and the strategy and scheduler. Each refusal
is one line (ModelNotSupported where `compare` lists the combination as a refused row)."""

from __future__ import annotations

from ..errors import InputError, ModelNotSupported
from .config import SimulationConfig, context_parallel_of, pipeline_parallel_of, tensor_parallel_of

# data-parallel strategies tensor parallelism composes with (their collectives run over the
# data-parallel groups; the others address ranks one by one)
TP_STRATEGIES = ("allreduce", "fsdp", "distopt")
# and pipeline parallelism (each stage's gradients all-reduced over its data-parallel groups)
PP_STRATEGIES = ("allreduce", "distopt")


def check_parallelism(cfg: SimulationConfig, topo):
    """(tensor, pipeline, context parallelism) of the run, each checked."""
    tp = tensor_parallel_of(cfg)
    tp.check_node(topo.gpus_per_node, topo.n_gpus)
    if tp.on and cfg.strategy not in TP_STRATEGIES:
        # the strategy cannot run under TP (compare lists the row refused, not the run)
        raise ModelNotSupported(f"--tensor-parallel {tp.size}: composes with --strategy "
                                f"{', '.join(TP_STRATEGIES[:-1])} or {TP_STRATEGIES[-1]}, "
                                f"not {cfg.strategy}")
    pp = pipeline_parallel_of(cfg)
    pp.check_world(topo.n_gpus, tp.size)
    if pp.on and cfg.strategy not in PP_STRATEGIES:
        raise ModelNotSupported(f"--pipeline-parallel {pp.size}: composes with --strategy "
                                f"{' or '.join(PP_STRATEGIES)}, not {cfg.strategy}")
    if pp.on and cfg.scheduler != "fifo":
        # priority steps each layer before its next forward, embrace-2d reorders the
        # backward: neither fits a stage's 1F1B program (forwards, backwards, then updates)
        raise ModelNotSupported(f"--pipeline-parallel {pp.size}: composes with --scheduler fifo, "
                                f"not {cfg.scheduler}")
    cp = context_parallel_of(cfg)
    cp.check_world(topo.n_gpus, tp.size, pp.size)
    return tp, pp, cp


def check_context_parallel(cfg: SimulationConfig, cp) -> None:
    """Refuse the strategies and run forms context parallelism is not modelled with, in one
    line each."""
    if not cp.on:
        return
    flag = f"--context-parallel {cp.size}"
    if cfg.strategy not in TP_STRATEGIES:
        raise ModelNotSupported(f"{flag}: composes with --strategy {', '.join(TP_STRATEGIES[:-1])} or "
                         f"{TP_STRATEGIES[-1]} (collectives over the data-parallel groups with CP), "
                         f"not {cfg.strategy}, which routes rows or parameters rank by rank as if "
                         f"each rank held whole samples")
    if cfg.trace:
        raise InputError(f"{flag}: a --trace times whole sequences, not a CP rank's share: "
                         f"not modelled together")
    # (--lengths / --corpus alone only shape these forms, or a table's token statistics)
    for key, value in (("--jitter", cfg.jitter),
                       ("--padding", None if cfg.padding in (None, "max") else cfg.padding),
                       ("--throughput", None if cfg.throughput in (None, "time") else cfg.throughput),
                       ("--accumulate-sync", "every" if cfg.accumulate_sync == "every" else None)):
        if value:
            raise InputError(f"{flag}: {key} {value} is not modelled with context parallelism "
                             f"(every rank's share of the sequence is --seq / C tokens)")


def check_pipeline_run(cfg: SimulationConfig, pp) -> None:
    """The run forms a pipeline is not modelled with (after the model's own stage split)."""
    if pp.on and (cfg.accumulate_sync == "every" or cfg.throughput == "iterations"):
        key = ("--accumulate-sync every" if cfg.accumulate_sync == "every"
               else "--throughput iterations")
        raise InputError(f"--pipeline-parallel {pp.size}: {key} is not modelled with a pipeline")

"""`embsim scale`: a scaling curve (step time, throughput, efficiency) over GPU counts."""

from __future__ import annotations

import tempfile

import click

from ..errors import InputError
from ..report.result_json import scale_json
from ..report.scaling_table import scaling_table
from ..workload.precision import AMP_STYLES, check_amp_flags
from ..sweep.check import check_points
from .checks import (MAX_ACCUMULATE, MAX_ITERATIONS, MODEL_HELP, count, force_option, model_option,
                     plot_option, refuse_overwrite)
from .options import (CORPUS, GRAD_COMPRESS, LENGTHS, NCCL_ENV, NCCL_VERSION, OPTIMIZER, PADDING, RECOMPUTE, SEED,
                      CONTEXT_PARALLEL, PIPELINE_PARALLEL, SEQUENCE_PARALLEL, TENSOR_PARALLEL,
                      VIRTUAL_PIPELINE, P2P_SEND_WAIT, P2P_OVERLAP, extra_option, parse_kv,
                      trainer_fields)
from ..sweep import parse_gpus, plot_scaling, read_results, run_sweep, scale_points, scaling_curve


@click.command("scale")
@model_option(MODEL_HELP + " (default with --trace: the trace's model)")
@click.option("--strategy", required=True, help="embedding synchronisation strategy")
@click.option("--scheduler", "comm_scheduler", default="fifo", show_default=True,
              help="communication scheduler")
@click.option("--topology", default="dgx-h100", show_default=True,
              help="preset (or file) whose nodes are replicated (default with --trace: the trace's machine)")
@click.option("--gpus", default="8,16,32,64,128", show_default=True, help="GPU counts, comma-separated")
@click.option("--iterations", type=count(2, MAX_ITERATIONS), default=3, show_default=True)
@click.option("--trace", type=click.Path(dir_okay=False), help="calibration trace")
@click.option("--dtype", type=click.Choice(["fp32", "tf32", "bf16", "fp16", "fp8"]),
              help="training precision (default: the model's)")
@click.option("--amp", type=click.Choice(list(AMP_STYLES)),
              help="mixed-precision style (see embsim simulate --help; default: the model's, else autocast)")
@click.option("--accumulate", type=count(1, MAX_ACCUMULATE),
              help="micro-batches per optimizer step (default: the model's global batch over the GPUs' batches, else 1)")
@click.option("--jitter", help="per-GPU compute variation (see embsim simulate --help)")
@SEED
@OPTIMIZER
@RECOMPUTE
@GRAD_COMPRESS
@TENSOR_PARALLEL
@SEQUENCE_PARALLEL
@PIPELINE_PARALLEL
@VIRTUAL_PIPELINE
@P2P_SEND_WAIT
@P2P_OVERLAP
@CONTEXT_PARALLEL
@CORPUS
@LENGTHS
@PADDING
@NCCL_ENV
@NCCL_VERSION
@extra_option("strategy/scheduler parameter KEY=VALUE, as in simulate (e.g. local_aggregation=false)")
@plot_option("write a PNG of the curve")
@click.option("--dask-scheduler", help="address of an existing Dask scheduler")
@click.option("--workers", type=click.IntRange(min=1), help="local cluster workers")
@click.option("--out", type=click.Path(file_okay=False), help="keep the sweep results here (resumable)")
@click.option("--json", "as_json", is_flag=True)
@force_option("--plot file")
def command(model, strategy, comm_scheduler, topology, gpus, iterations, trace, dtype, amp, accumulate,
            jitter, seed, optimizer, recompute, grad_compress, tensor_parallel, sequence_parallel, pipeline_parallel, virtual_pipeline,
            p2p_send_wait, p2p_overlap, context_parallel, corpus, lengths,
            padding, nccl_env, nccl_version, extra, plot, dask_scheduler,
            workers, out, as_json, force):
    """Simulate MODEL with STRATEGY at each GPU count and report how it scales."""
    import json
    refuse_overwrite(plot, force, "--plot")
    check_amp_flags(dtype, amp)
    model, topology = trace_run(model, topology, trace)
    base = {"model": model, "strategy": strategy, "scheduler": comm_scheduler,
            "iterations": iterations, "trace": trace, "dtype": dtype, "amp": amp, "accumulate": accumulate,
            # the seed only when given: an old --out's rows match the points as they were
            "jitter": jitter, **({"seed": seed} if seed else {}),
            **({"recompute": recompute} if recompute else {}),
            **({"grad_compress": grad_compress} if grad_compress else {}),
            **({"tensor_parallel": tensor_parallel} if tensor_parallel != 1 else {}),
            **({"sequence_parallel": sequence_parallel} if sequence_parallel is not None else {}),
            **({"pipeline_parallel": pipeline_parallel} if pipeline_parallel != 1 else {}),
            **({"virtual_pipeline": virtual_pipeline} if virtual_pipeline != 1 else {}),
            **({"p2p_send_wait": p2p_send_wait} if p2p_send_wait else {}),
            **({"p2p_overlap": p2p_overlap} if p2p_overlap is not None else {}),
            **({"context_parallel": context_parallel} if context_parallel != 1 else {}),
            **trainer_fields(optimizer, corpus, lengths, padding, nccl_env, nccl_version),
            **routed_options(strategy, comm_scheduler, extra)}
    if dtype or grad_compress:      # refuse a precision the GPU lacks before any point runs
        from ..topology import load_topology
        from ..workload.gpu_compute import for_gpu
        from ..workload.grad_compress import GradCompress
        from ..workload.precision import precision
        gpu = for_gpu(load_topology(topology).node.gpu)
        if dtype:
            gpu.gemm_peak(precision(dtype))
        GradCompress.parse(grad_compress).check_gpu(gpu)
    points = scale_points(topology, parse_gpus(gpus), base)
    check_points(points, "scale")
    with tempfile.TemporaryDirectory() as tmp:
        folder = out or tmp
        # another scale's (or sweep's) --out is refused, not mixed into (runner.refuse_other_sweep)
        run_sweep(points, folder, scheduler=dask_scheduler, workers=workers, progress=not as_json,
                  name=f"scale {model} {strategy} {comm_scheduler} {topology}")
        curve = scaling_curve(points, read_results(folder))
    if as_json:
        click.echo(json.dumps(scale_json(model, strategy, comm_scheduler, curve), indent=2))
    else:
        click.echo(scaling_table(curve, f"{model} / {strategy} / {comm_scheduler} on {topology}"))
    if not any(c.error is None for c in curve):
        click.echo("embsim: error: scale: no GPU count succeeded", err=True)
        return 1
    if plot:
        sources = "; ".join(dict.fromkeys(c.compute_source for c in curve if c.compute_source))
        plot_scaling(curve, plot, f"{model} / {strategy} / {comm_scheduler}" + (f"\n{sources}" if sources else ""))
        if not as_json:
            click.echo(f"wrote {plot}")


def trace_run(model: str | None, topology: str, trace: str | None) -> tuple[str, str]:
    """--model and --topology as `simulate --trace` takes them (engine.trace_defaults): the
    trace's model and machine where no flag gave them. Without a trace, --model is required."""
    from .options import explicit_flags
    if not trace:
        if model is None:
            raise InputError("scale: --model is required (or give --trace: its model)")
        return model, topology
    from ..engine.config import SimulationConfig
    from ..engine.trace_defaults import apply_trace_defaults
    from ..topology import TopologySpec
    given = {"model"} if model is not None else set()
    if "topology" in explicit_flags():
        given.add("topology")
    cfg = apply_trace_defaults(SimulationConfig(model=model or SimulationConfig.model, topology=topology,
                                                trace=trace), given | {"batch", "seq"})
    # scale replicates the machine's nodes: the preset or file, not the trace's shape
    where = topology if "topology" in given else TopologySpec.parse(cfg.topology).where
    return cfg.model, where


def routed_options(strategy: str, scheduler: str, extra: tuple) -> dict:
    """--option pairs as every point's strategy_options / scheduler_options, routed to the
    component whose Options declare each key (engine.config.with_options, as simulate
    does); an unknown strategy, scheduler or key is a one-line error before any point runs."""
    if not extra:
        return {}
    from ..engine.config import SimulationConfig, with_options
    cfg = with_options(SimulationConfig(strategy=strategy, scheduler=scheduler), parse_kv(extra))
    return {"strategy_options": dict(cfg.strategy_options), "scheduler_options": dict(cfg.scheduler_options)}

"""A trace is a run's starting point: its model, machine, batch and sequence length are
the defaults of `simulate --trace T`, a flag that contradicts it is refused, and where the
run leaves what was measured the output says so.

The trace's machine is found in a fixed, stated order (never the working directory):
1. the topology embedded in the trace (`host_topology`, written by `embsim calibrate`);
2. the file the trace names, beside the trace or in a `topologies/` folder beside the
   trace's folder (a checkout's traces/ and topologies/);
3. the preset of that name ($EMBSIM_TOPOLOGY_PATH, then the packaged presets).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..errors import InputError
from ..topology import find_preset, load_topology
from ..trace import load_trace
from ..workload import load_spec
from .measured import MeasuredInputs


def trace_topology(trace, trace_path: str | Path, world: int | None = None) -> str:
    """A --topology value for the machine the trace measured (see the module docstring),
    with `world` ranks (default: the trace's own) on the trace's number of nodes."""
    trace_path = Path(trace_path)
    world = world or trace.provenance.world
    nodes = trace.provenance.nodes if world % max(1, trace.provenance.nodes) == 0 else 1
    shape = f"{nodes}x{world // nodes}"
    if trace.host_topology is not None:
        return f"{trace_path}:{shape}"
    name = trace.topology
    if not name:
        raise InputError(f"{trace_path}: the trace names no topology; give --topology")
    stem = Path(name).name.removesuffix(".yaml").removesuffix(".yml")
    beside = [trace_path.parent / Path(name).name,
              trace_path.parent.parent / "topologies" / Path(name).name]
    for path in beside:
        try:
            if path.is_file():
                return f"{path}:{shape}"
        except OSError:        # a name too long to look up is not there
            continue
    if find_preset(stem) is not None:
        return f"{stem}:{shape}"
    raise InputError(f"{trace_path}: topology {name!r} not found (looked beside the trace, in "
                     f"{beside[1].parent} and among the presets); give --topology")


def trace_batch(trace) -> int:
    """The batch the trace ran whole steps at, else the largest batch it timed layers at."""
    steps = sorted({s.batch for s in trace.steps.values()})
    if steps:
        return steps[-1]
    return max(trace.batches)


def apply_trace_defaults(cfg, explicit: set[str]):
    """`cfg` with the trace's model, topology, batch and seq where no flag gave them.
    A --model that is not the trace's model is refused: its layers were not measured."""
    if not cfg.trace:
        return cfg
    trace = load_trace(cfg.trace)
    if not trace.layers:
        return cfg          # collective curves only (import-nccl-tests): no model to default
    changes = {}
    if "model" in explicit:
        name = load_spec(cfg.model).name
        if name != trace.model:
            raise InputError(f"--model {cfg.model}: the trace {cfg.trace} measured {trace.model}, "
                             f"not {name}; its layer times are not {name}'s (drop --model, or "
                             f"drop --trace for a labelled kernel-model estimate)")
    else:
        changes["model"] = trace.model
    if "topology" not in explicit:
        changes["topology"] = trace_topology(trace, cfg.trace)
        load_topology(changes["topology"])
    if "batch" not in explicit:
        changes["batch"] = trace_batch(trace)
    if "seq" not in explicit:
        changes["seq"] = trace.seq
    # the model the layers were timed in: calibrate unties a tied output projection
    if "untie_outputs" not in explicit and any(s.untied_outputs for s in trace.steps.values()):
        changes["untie_outputs"] = True
    # a measured step ends with its slowest rank, the layer times are rank 0's: one rank
    # slower by the measured skew, as `validate --trace` scores the steps (a --straggler or
    # --jitter of the run's own replaces it; --jitter scales by the skew itself)
    if not ({"straggler", "jitter"} & explicit) and cfg.straggler is None and not cfg.jitter:
        world = load_topology(changes.get("topology", cfg.topology)).n_gpus
        slowest = MeasuredInputs(trace, True).slowest_rank(world)
        if slowest is not None:
            changes["straggler"] = slowest
    return replace(cfg, **changes)

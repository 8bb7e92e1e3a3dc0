"""Measured vs simulated training steps: every strategy a trace ran for real, simulated on
the trace's own topology with the trace's own per-layer and collective timings."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..engine.measured import MeasuredInputs
from ..engine.run import SimulationConfig, simulate
from ..engine.trace_defaults import trace_topology
from ..errors import InputError
from ..trace import load_trace
from ..workload import load_spec


@dataclass(frozen=True)
class StepError:
    strategy: str
    world: int
    measured_s: float
    simulated_s: float | None
    problem: str | None = None     # why it could not be simulated
    topology: str = ""             # what it was simulated on
    compute_source: str = ""       # where the simulation's compute times came from

    @property
    def error(self) -> float | None:
        """simulated/measured - 1."""
        return None if self.simulated_s is None else self.simulated_s / self.measured_s - 1.0




def capped_tables(trace) -> dict:
    """The steps ran the model with its tables cut to calibrate --max-rows: simulate that."""
    if not trace.table_rows_cap:
        return {}
    cap = trace.table_rows_cap
    big = {t.name: {"vocab": cap} for t in load_spec(trace.model).tables if t.vocab > cap}
    return {"tables": big} if big else {}


def step_errors(trace_path: str | Path, iterations: int = 4) -> list[StepError]:
    trace_path = Path(trace_path)
    trace = load_trace(trace_path)
    if not trace.steps:
        raise InputError(f"{trace_path}: the trace measured no whole training steps (steps: [])")
    out = []
    overrides = capped_tables(trace)     # every step ran the same tables
    for s in trace.steps.values():
        # simulate the model the steps ran (calibrate unties a tied output projection);
        # interference defaults to the trace's own measurement
        cfg = SimulationConfig(topology=trace_topology(trace, trace_path, s.world),
                               model=trace.model, batch=s.batch, seq=s.seq, strategy=s.strategy,
                               trace=str(trace_path), iterations=iterations,
                               efficiency_baseline=False, untie_outputs=s.untied_outputs,
                               straggler=MeasuredInputs(trace, True).slowest_rank(s.world),
                               model_overrides=overrides)
        try:
            result = simulate(cfg, trace=trace)   # read once, above
        except InputError as exc:
            out.append(StepError(s.strategy, s.world, s.median_s, None, str(exc)))
            continue
        out.append(StepError(s.strategy, s.world, s.median_s, result.step_time,
                             topology=cfg.topology, compute_source=result.compute_source))
    reasons = {e.problem for e in out}
    if out and all(e.simulated_s is None for e in out) and len(reasons) == 1:
        # one cause for every step (an unknown model, a device the topology lacks): bad
        # input, one line, not a table of the same refusal
        raise InputError(f"{trace_path}: {reasons.pop()}")
    return out

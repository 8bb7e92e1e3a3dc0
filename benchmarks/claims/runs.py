"""The few runs of its own behind the page's what-ifs, which take seconds: the NIC line rate
lowered (`--hardware nic_gbit` as `embsim simulate` takes it), strategy or scheduler options
changed, or interference switched off. Each distinct run is simulated once."""

from __future__ import annotations

from functools import lru_cache

from embsim.engine.run import SimulationConfig, simulate

from .data import TOPOLOGY

NIC_GBITS = (25, 10, 1)          # the what-ifs; 100 Gb/s is the preset, the matrices' own rows
ITERATIONS = 3                   # as results_matrix.sh


@lru_cache(None)
def run(model: str, cluster: str, strategy: str, scheduler: str = "fifo", gbit: float | None = None,
        strategy_options: tuple = (), interference: float | None = None, scheduler_options: tuple = ()):
    hardware = {"nic_gbit": gbit} if gbit else {}
    return simulate(SimulationConfig(topology=TOPOLOGY[cluster], model=model, strategy=strategy,
                                     scheduler=scheduler, iterations=ITERATIONS, efficiency_baseline=False,
                                     hardware=hardware, strategy_options=dict(strategy_options),
                                     scheduler_options=dict(scheduler_options),
                                     interference=interference))


def run_ms(*a, **kw) -> float:
    return run(*a, **kw).step_time * 1e3

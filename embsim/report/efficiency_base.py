"""What a run's scaling efficiency is measured against: N x the same strategy and scheduler
on one GPU (engine.run simulates that run beside the real one). Strategies' one-GPU steps
differ (allreduce steps a dense vocab x dim table, embrace and allgather only the rows
looked up), so efficiencies of different strategies have different bases: compare their
step times or throughputs, not their efficiencies."""

from __future__ import annotations


def efficiency_base(strategy: str, scheduler: str) -> str:
    """' running allreduce/fifo itself (each strategy against its own one-GPU run)': the
    words after "N x one GPU" in the scaling-efficiency line."""
    return (f" running {strategy}/{scheduler} itself (each strategy against its own one-GPU "
            f"run: compare strategies by step time, not by efficiency)")

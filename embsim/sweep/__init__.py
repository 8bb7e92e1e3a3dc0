"""Sweeps: a grid of simulation configurations run on Dask, resumable, one row per point."""

from .runner import SweepSummary, read_results, run_sweep, simulate_point
from .scale import ScalePoint, parse_gpus, plot_scaling, scale_points, scaling_curve, topology_for
from .spec import SweepPoint, SweepSpec, config_hash, load_sweep, parse_sweep, sweep_from_text

__all__ = ["ScalePoint", "SweepPoint", "SweepSpec", "SweepSummary", "config_hash", "load_sweep",
           "parse_gpus", "parse_sweep", "plot_scaling", "read_results", "run_sweep",
           "scale_points", "scaling_curve", "simulate_point", "sweep_from_text", "topology_for"]

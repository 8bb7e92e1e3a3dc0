"""`embsim validate`: simulation vs real measurements (nccl-tests curves, training steps)."""

from .collectives import collective_errors, model_version, run_errors, topology_for_run, validation_file_errors
from .report import (collective_geomean, collective_json, collective_table, geomean_abs,
                     plot_collectives, step_geomean, step_json, step_table)
from .steps import StepError, step_errors, trace_topology

__all__ = ["StepError", "collective_errors", "model_version", "collective_geomean", "collective_json",
           "collective_table", "geomean_abs", "plot_collectives", "run_errors", "step_errors",
           "step_geomean", "step_json", "step_table", "topology_for_run", "trace_topology",
           "validation_file_errors"]

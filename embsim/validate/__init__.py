"""`embsim validate`: simulation vs real measurements (nccl-tests curves, training steps)."""

from .collectives import collective_errors, model_version, run_errors, topology_for_run, validation_file_errors
from .report import (collective_json, collective_summary, collective_table, plot_collectives,
                     step_json, step_summary, step_table)
from .steps import StepError, step_errors, trace_topology

__all__ = ["StepError", "collective_errors", "model_version", "collective_summary", "collective_json",
           "collective_table", "plot_collectives", "run_errors", "step_errors",
           "step_summary", "step_json", "step_table", "topology_for_run", "trace_topology",
           "validation_file_errors"]

"""The calibration trace schema shared by embsim.calibrate (writer) and the simulator (reader).

    from embsim.trace import load_trace, Trace, write_trace
    t = load_trace("traces/cpu-gloo-tiny-lm.yaml")
    fwd, bwd = t.interp("embed", batch=16)
"""

from .io import TraceError, dump_trace, load_trace, parse_trace, trace_to_dict, write_trace
from .schema import (SCHEMA_VERSION, CollectiveCurve, InterferenceMeasurement, LayerPoint, LayerTiming, OptimizerTiming,
                     Provenance, RankSkew, StepSamples, TokenStatsRecord, Trace)

__all__ = ["SCHEMA_VERSION", "CollectiveCurve", "InterferenceMeasurement", "LayerPoint", "LayerTiming", "OptimizerTiming",
           "Provenance", "RankSkew", "StepSamples", "TokenStatsRecord", "Trace", "TraceError", "dump_trace",
           "load_trace", "parse_trace", "trace_to_dict", "write_trace"]

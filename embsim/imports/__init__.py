"""Importers for what real tools measured: nccl-tests stdout logs and PyTorch profiler
(Kineto) Chrome traces, turned into embsim's own data (traces, validation rows)."""

from .kineto import LayerSamples, ProfileError, ProfileLayers, load_profile, profile_layers
from .nccl_tests_log import (Measurement, NcclTestsRow, NcclTestsRun, load_nccl_tests_log,
                             parse_nccl_tests_log)
from .nccl_tests_ranks import NcclTestsLogError, NotNcclTestsLog, with_rank_count
from .to_trace import collective_curve, trace_from_nccl_tests, trace_from_profile

__all__ = ["LayerSamples", "Measurement", "NcclTestsLogError", "NcclTestsRow", "NcclTestsRun",
           "NotNcclTestsLog", "ProfileError", "ProfileLayers", "collective_curve", "load_nccl_tests_log",
           "load_profile", "parse_nccl_tests_log", "profile_layers", "trace_from_nccl_tests",
           "trace_from_profile", "with_rank_count"]

"""workload/fp8_comm.py: which tensor-parallel collectives move FP8, and the TP label."""

from embsim.workload.fp8_comm import tp_gather_bytes, tp_gathers_fp8
from embsim.workload.tensor_parallel import TensorParallel


def test_only_fp8_runs_gather_one_byte():
    assert tp_gather_bytes("fp8", 2) == 1 and tp_gathers_fp8("fp8")
    assert [tp_gather_bytes(d, e) for d, e in (("bf16", 2), ("fp16", 2), ("fp32", 4))] == [2, 2, 4]


def test_label_names_the_fp8_gathers_under_sequence_parallelism_only():
    sp, plain = TensorParallel.of(8), TensorParallel.of(8, sequence=False)
    assert "all-gathers in FP8" in sp.label(32, "fp8")
    assert "reduce-scatters 16-bit" in sp.label(32, "fp8")
    assert "FP8" not in sp.label(32, "bf16") and "FP8" not in sp.label(32)
    assert "FP8" not in plain.label(32, "fp8")

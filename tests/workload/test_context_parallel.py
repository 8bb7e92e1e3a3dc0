"""workload.context_parallel: the flag's checks, TE's ring transfers per direction, the model
refusals, and the kernel model's key count for an unmasked ring step."""

import pytest

from embsim.errors import InputError
from embsim.workload import load_model
from embsim.workload.context_parallel import ContextParallel
from embsim.workload.gpu_compute import for_gpu
from embsim.workload.kernel_time import attention_s
from embsim.workload.kernels import attention
from embsim.workload.precision import precision
from embsim.topology import load_topology


def test_of_and_exchanges():
    assert not ContextParallel.of(None).on and ContextParallel.of(4).on
    for bad in (0, -1, True, 2.0):
        with pytest.raises(InputError, match="--context-parallel"):
            ContextParallel.of(bad)
    assert ContextParallel(1).exchanges(True) == ()
    assert ContextParallel(2).exchanges(True) == (("KV", 1),)
    assert ContextParallel(2).exchanges(False) == (("KV", 1), ("dKV", 1))
    assert ContextParallel(4).exchanges(False) == (("KV", 1), ("KV+dKV", 2), ("KV+dKV", 2), ("dKV", 1))
    with pytest.raises(InputError, match=r"does not divide 8 GPUs / \(--tensor-parallel 2 x --pipeline-parallel 1\) = 4"):
        ContextParallel(3).check_world(8, 2, 1)
    ContextParallel(4).check_world(8, 2, 1)


def test_model_refusals():
    with pytest.raises(InputError, match="seq 4100 does not divide into 8 chunks"):
        load_model("llama2-7b", seq=4100, context_parallel=ContextParallel(4))
    with pytest.raises(InputError, match="unfused attention"):
        load_model("llama2-7b", seq=4096, overrides={"layers": {"decoder": {"flash_attention": False}}},
                   context_parallel=ContextParallel(2))
    with pytest.raises(InputError, match="no transformer blocks"):
        load_model("lstm-lm1b", context_parallel=ContextParallel(2))
    # the per-GPU limits are on one rank's share of the sequence
    m = load_model("llama2-7b", batch=1, seq=1 << 20, context_parallel=ContextParallel(32))
    assert (m.seq, m.sample_seq) == (1 << 15, 1 << 20)


def test_an_unmasked_pass_counts_its_keys():
    gpu = for_gpu(load_topology("dgx-h100:1x8").node.gpu)
    prec = precision("bf16")
    full = attention_s(attention("a", 8192, 128, 8192, 32, False, False), gpu, prec, 2)
    half = attention_s(attention("a", 8192, 128, 4096, 32, False, False), gpu, prec, 2)
    assert half == pytest.approx(full / 2, rel=1e-9)
    # a causal pass keeps the published rates' convention (half the square)
    causal = attention_s(attention("a", 8192, 128, 4160, 32, False, True), gpu, prec, 2)
    assert causal > 0

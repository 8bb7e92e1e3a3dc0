"""Tensor parallelism in the workload (workload/tensor_parallel.py, the TP rank's shapes)."""

import pytest

from embsim.errors import InputError
from embsim.workload import load_model
from embsim.workload.memory import memory_per_gpu
from embsim.workload.tensor_parallel import TensorParallel

TP = TensorParallel.of


def gemm_flops(layer, direction="fwd"):
    return sum(2 * k.m * k.n * k.k * k.batch for k in getattr(layer.kernels, direction) if k.kind == "gemm")


def test_forms_and_default_sequence_parallelism():
    assert TP(None) == TensorParallel() and not TP(1).on and not TP(1).sequence
    assert TP(4).sequence and not TP(4, False).sequence
    with pytest.raises(InputError, match="--sequence-parallel needs --tensor-parallel > 1"):
        TP(1, True)
    for bad in (0, -2, 1.5, True):
        with pytest.raises(InputError, match="--tensor-parallel"):
            TP(bad)


@pytest.mark.parametrize("k", [2, 4, 8])
def test_block_gemm_flops_and_weights_drop_by_k(k):
    one = load_model("llama3-8b", batch=1, seq=2048)
    many = load_model("llama3-8b", batch=1, seq=2048, tensor_parallel=TP(k))
    a, b = one.layer("decoder.0"), many.layer("decoder.0")
    for d in ("fwd", "bwd"):
        assert gemm_flops(b, d) * k == gemm_flops(a, d)
    norms = 2 * 4096                      # two RMSNorm weights, whole on every rank
    assert b.params == (a.params - norms) // k + norms
    assert many.table("word").vocab * k == one.table("word").vocab
    # the attention core: 1/k of the heads
    attn = [kk for kk in b.kernels.fwd if kk.kind == "attention"][0]
    attn1 = [kk for kk in a.kernels.fwd if kk.kind == "attention"][0]
    assert attn.batch * k == attn1.batch


def test_block_activations_follow_korthikanti():
    """Sequence parallelism splits every saved activation k ways; without it the norms'
    inputs stay whole (sbh(10 + 24/t ...) vs sbh(34/t ...))."""
    one = load_model("gpt2", batch=4, seq=1024, dtype="bf16").layer("decoder.0")
    sp = load_model("gpt2", batch=4, seq=1024, dtype="bf16", tensor_parallel=TP(4)).layer("decoder.0")
    nosp = load_model("gpt2", batch=4, seq=1024, dtype="bf16",
                      tensor_parallel=TP(4, False)).layer("decoder.0")
    assert sp.activation_bytes == pytest.approx(one.activation_bytes / 4, rel=1e-6)
    assert one.activation_bytes / 4 < nosp.activation_bytes < one.activation_bytes


def test_memory_per_gpu_drops_about_k():
    one = memory_per_gpu(load_model("llama3-8b", batch=1, seq=4096))
    four = memory_per_gpu(load_model("llama3-8b", batch=1, seq=4096, tensor_parallel=TP(4)))
    for part in ("params", "grads"):
        assert getattr(four, part) == pytest.approx(getattr(one, part) / 4, rel=0.001)
    assert four.activations < one.activations / 3


@pytest.mark.parametrize("model, k, what", [("llama3-8b", 3, "heads 32"), ("gpt2", 5, "heads 12"),
                                            ("llama3-8b", 16, "kv_heads 8")])
def test_k_that_does_not_divide_the_block_is_refused(model, k, what):
    with pytest.raises(InputError, match=f"--tensor-parallel {k}: does not divide model {model}'s {what}"):
        load_model(model, tensor_parallel=TP(k))


def test_a_model_without_blocks_is_refused():
    with pytest.raises(InputError, match="lstm-lm1b has no transformer blocks"):
        load_model("lstm-lm1b", tensor_parallel=TP(2))


def test_collectives_per_block():
    assert TP(4, False).block_collectives(True) == (("all_reduce", False),) * 2
    assert TP(4, False).block_collectives(False) == (("all_reduce", True),) * 2
    ops = [op for op, _ in TP(4).block_collectives(True)]
    assert sorted(ops) == ["all_gather", "all_gather", "reduce_scatter", "reduce_scatter"]
    bwd = TP(4).block_collectives(False)
    assert sorted(op for op, _ in bwd).count("all_gather") == 4 and len(bwd) == 6
    assert TP(1).block_collectives(True) == () and TP(1).label(32) == ""
    assert TP(4).label(32).startswith("tensor parallel 4 (sequence parallel): 2 all-gathers + 2 reduce-scatters")

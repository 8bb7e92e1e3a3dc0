"""workload.torch_cp and torch_cp_kernels: PyTorch's experimental context_parallel (torchtitan's CP) beside TE's
ring: the option's checks, its transfers per rotater, its per-step SDPA calls and the FP32
merge / gradient-accumulation kernels at their byte counts."""

import pytest

from embsim.errors import InputError
from embsim.workload import load_model
from embsim.workload.context_parallel import ContextParallel
from embsim.workload.torch_cp_kernels import backward_accumulates, forward_merges


def _block(c, impl, fused=False, seq=8192):
    over = {"layers": {"decoder": {"flash_attention": "fa2", "fused_elementwise": fused}}}
    m = load_model("llama3-8b", batch=1, seq=seq, dtype="bf16", overrides=over,
                   context_parallel=ContextParallel.of(c, impl))
    return m, next(l for l in m.layers if l.kind == "transformer_decoder")


def test_impl_option_checked_and_te_the_default():
    assert ContextParallel.of(4).impl == "te" and not ContextParallel.of(4).torch
    assert ContextParallel.of(4, "torch-allgather").torch
    for bad in ("torch", "allgather", "TE", ""):
        with pytest.raises(InputError, match=r"^--context-parallel-impl '.*': expected one of te, "
                                             r"torch-allgather, torch-alltoall$"):
            ContextParallel.of(4, bad)
    # TE's transfers are what they were
    assert ContextParallel(4).exchanges(False) == (("KV", 1), ("KV+dKV", 2), ("KV+dKV", 2), ("dKV", 1))


def test_transfers_per_rotater():
    ag = ContextParallel(4, "torch-allgather")
    (gather,) = ag.transfers(True)
    # one all-gather of every rank's K and V, posted before step 0, waited for before step 1
    assert (gather.op, gather.chunks, gather.after, gather.beside) == ("all_gather", 4, -1, 0)
    bwd = ag.transfers(False)
    assert bwd[0] == gather
    dkv = bwd[1:]
    # the FP32 dKV permuted after every step, waited for after the next; the last beside nothing
    assert [(x.op, x.fp32, x.after, x.beside) for x in dkv] == [("sendrecv", True, i, i + 1) for i in range(4)]
    a2a = ContextParallel(4, "torch-alltoall")
    assert [(x.op, x.chunks, x.after, x.beside) for x in a2a.transfers(True)] == \
        [("sendrecv", 1, i - 1, i) for i in range(3)]
    assert len(a2a.transfers(False)) == 3 + 4


def test_same_balanced_attention_as_te_plus_fp32_merges():
    _, te = _block(8, "te")
    m, pt = _block(8, "torch-allgather")
    flash = lambda l, bwd: [k for k in (l.kernels.bwd if bwd else l.kernels.fwd)
                            if k.kind == "attention"]
    for bwd in (False, True):
        assert [(k.m, k.k, k.causal) for k in flash(pt, bwd)] == [(k.m, k.k, k.causal) for k in flash(te, bwd)]
    # load-balanced split: each rank 1/C of the causal products
    products = sum(k.m * k.m / 2 if k.causal else k.m * k.k / 2 for k in flash(pt, False))
    assert products == 8192 * 8192 / 2 / 8
    # K and V at the query width (torchtitan repeats the KV heads before SDPA)
    assert (te.kernels.kv_width, pt.kernels.kv_width) == (2 * 1024, 2 * 4096)
    # eager merge of a middle step: cast (2 + 4 bytes), 3 + 2 + 3 FP32 passes, the K/V cat
    n = 1024 * 4096
    step3 = [k for k in pt.kernels.fwd if k.name.startswith("self_attn.flash.cp3.")]
    assert sum(k.nbytes for k in step3) == n * (6 + 32) + 2 * 2 * n * 2
    assert "context parallel 8 (PyTorch context_parallel, all-gather rotater, load-balanced causal)" \
        == m.context_parallel.label(True)


def test_compiled_merges_are_single_passes():
    n = 1000
    eager = sum(k.nbytes for i in range(4) for k in forward_merges("x", i, 4, n, n, 2, False, "torch-allgather"))
    fused = sum(k.nbytes for i in range(4) for k in forward_merges("x", i, 4, n, n, 2, True, "torch-allgather"))
    # compiled: step 0 only its K/V cat (the all-gather reads it); steps 1-3 one pass each
    assert fused == 2 * 2 * n * 2 + n * (2 + 2 + 4) + n * (4 + 2 + 4) + n * (4 + 2 + 2)
    assert fused < eager
    # backward, eager, step 0: K/V cat, zero-fill, dK+dV add, FP32 dKV cat, dQ add
    step0 = backward_accumulates("x", 0, 4, n, n, 2, False, "torch-allgather")
    assert [k.nbytes for k in step0] == [8 * n, 12 * n, 2 * n * 10, 16 * n, 10 * n]
    # the all-to-all rotater's cats are all sent, so compiled keeps them
    a2a = [k for i in range(4) for k in forward_merges("x", i, 4, n, n, 2, True, "torch-alltoall")
           if k.name.endswith("kv_cat")]
    assert len(a2a) == 3


def test_refuses_non_causal_attention():
    with pytest.raises(InputError, match="--context-parallel-impl torch-allgather: model bert-large"):
        load_model("bert-large", seq=512, overrides={"layers": {"encoder": {"flash_attention": True}}},
                   context_parallel=ContextParallel(2, "torch-allgather"))

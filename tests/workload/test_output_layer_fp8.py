"""--dtype fp8: the output layer's GEMMs stay at the BF16 rate (Megatron-Core's output
layer is a plain ColumnParallelLinear, torchtitan's Float8 conversion skips `output`;
embsim.workload.kernels_layers.output_layer_16bit), every block GEMM runs at the FP8 rate."""

import pytest

from embsim.topology import load_topology
from embsim.workload import load_model
from embsim.workload.compute import model_times
from embsim.workload.gpu_compute import for_gpu
from embsim.workload.kernel_time import kernel_time
from embsim.workload.kernels import gemm
from embsim.workload.precision import precision, unquantized

H100 = for_gpu(load_topology("dgx-h100:1x1").node.gpu)
FP8, BF16 = precision("fp8"), precision("bf16")


def llama(dtype, model="llama3-8b"):
    return load_model(model, batch=1, seq=2048, dtype=dtype, amp="megatron")


def test_unquantized_is_bf16_under_fp8_only():
    assert unquantized(FP8) == BF16
    for name in ("fp32", "tf32", "bf16", "fp16"):
        assert unquantized(precision(name)) == precision(name)


def test_an_unquantized_gemm_runs_at_the_bf16_rate_under_fp8():
    from dataclasses import replace
    k = gemm("logits.gemm", 8192, 128256, 4096)
    out = replace(k, unquantized=True)
    assert kernel_time(out, H100, FP8, 2) == kernel_time(k, H100, BF16, 2)
    assert kernel_time(k, H100, FP8, 2).gpu_s < 0.8 * kernel_time(out, H100, FP8, 2).gpu_s
    for p in (BF16, precision("fp16"), precision("tf32")):        # no other dtype moves
        e = p.storage_bytes
        assert kernel_time(out, H100, p, e) == kernel_time(k, H100, p, e)


@pytest.mark.parametrize("model", ["llama3-8b", "gpt3-5b"])     # untied and tied heads
def test_output_layer_times_the_same_under_fp8_and_bf16(model):
    fp8, bf16 = llama("fp8", model), llama("bf16", model)
    head = "lm_head"
    lk = fp8.layer(head).kernels
    gemms = [k for k in lk.fwd + lk.bwd if k.kind == "gemm"]
    assert len(gemms) == 3 and all(k.unquantized for k in gemms)   # forward, dgrad, wgrad
    tf, tb = model_times(fp8, H100, recompute=False), model_times(bf16, H100, recompute=False)
    assert tf[head].fwd_s == tb[head].fwd_s and tf[head].bwd_s == tb[head].bwd_s
    # the blocks' GEMMs are FP8 (and carry no flag): their layer is faster under fp8
    block = next(layer.name for layer in fp8.layers if layer.kind == "transformer_decoder")
    assert not any(k.unquantized for k in fp8.layer(block).kernels.fwd)
    assert tf[block].fwd_s < tb[block].fwd_s


def test_llama3_8b_head_under_fp8_is_the_bf16_head():
    # the bug this fixes: an fp8 run's LM head at the FP8 rate (~1.7x too fast on H100)
    lk = llama("fp8").layer("lm_head").kernels
    flagged = sum(kernel_time(k, H100, FP8, 2).gpu_s for k in lk.fwd + lk.bwd)
    from dataclasses import replace
    as_fp8 = sum(kernel_time(replace(k, unquantized=False), H100, FP8, 2).gpu_s for k in lk.fwd + lk.bwd)
    assert flagged > 1.4 * as_fp8

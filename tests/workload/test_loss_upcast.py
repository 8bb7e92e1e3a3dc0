"""log_softmax(logits, dtype=float32) on FP16 CUDA logits: ATen's half_to_float path (one
kernel reads 16-bit, writes FP32; its backward writes 16-bit), no separate casts. BF16 and
losses without the key keep the cast kernels."""

from embsim.workload import load_model


def _loss(dtype, upcast=True, model="gnmt"):
    overrides = None if upcast else {"layers": {"loss": {"upcast_in_kernel": False}}}
    kl = load_model(model, batch=128, seq=28, dtype=dtype, overrides=overrides).layer("loss").kernels
    return {k.name: k.nbytes for k in kl.fwd + kl.bwd}


def test_fp16_upcast_in_kernel_has_no_casts_and_fewer_bytes():
    fused, cast = _loss("fp16"), _loss("fp16", upcast=False)
    assert not any(name.endswith(".cast") for name in fused)
    assert {"loss.logits.cast", "loss.grad.cast"} <= set(cast)
    elems = 128 * 28 * 32320
    assert sum(fused.values()) == elems * ((2 + 4) + 4 + (2 * 4 + 2))
    assert sum(cast.values()) == elems * ((2 + 4) + 8 + 4 + 12 + (4 + 2))


def test_bf16_and_fp32_are_unchanged_by_the_key():
    assert _loss("bf16") == _loss("bf16", upcast=False)
    assert _loss("fp32") == _loss("fp32", upcast=False)


def _mpt_loss(dtype, fused=True):
    overrides = None if fused else {"layers": {"lm_loss": {"fused": False}}}
    kl = load_model("mpt-125m", batch=4, seq=2048, dtype=dtype, overrides=overrides).layer("lm_loss").kernels
    return {k.name: k.nbytes for k in kl.fwd + kl.bwd}


def test_fused_xentropy_reads_the_logits_once_each_way_in_their_dtype():
    # mpt-* (llm-foundry's default loss_fn fused_crossentropy): one kernel each way, 16-bit
    elems = 4 * 2048 * 50368
    assert _mpt_loss("bf16") == {"loss.xentropy": elems * 2, "loss.xentropy_bwd": elems * 2 * 2}
    assert _mpt_loss("fp32") == {"loss.xentropy": elems * 4, "loss.xentropy_bwd": elems * 2 * 4}
    unfused = _mpt_loss("bf16", fused=False)
    assert {"loss.logits.cast", "loss.grad.cast"} <= set(unfused)
    assert sum(unfused.values()) > 5 * sum(_mpt_loss("bf16").values())

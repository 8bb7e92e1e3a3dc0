"""The optimizer step's kernels: fused multi-tensor vs torch.optim's per-tensor loop,
apex O2 master-weight copies and clip_grad_norm_, as memory-bound passes."""

import pytest

from embsim.errors import InputError
from embsim.topology import load_topology
from embsim.workload import load_model
from embsim.workload.compute import optimizer_kernels, optimizer_step_time, sparse_optimizer_step_time
from embsim.workload.gpu_compute import for_gpu

GNMT = "gnmt"


def _bytes(model, elements=1e6):
    return sum(k.nbytes * k.count for k in optimizer_kernels(elements, model))


def _model(dtype, **opt):
    # the zoo gnmt trains as DeepLearningExamples does (per-tensor Adam, clipped): these
    # tests start from the fused, unclipped step and say what they change
    opt = {"implementation": "fused", "clip_grad_norm": False, **opt}
    return load_model(GNMT, dtype=dtype, amp="o2", overrides={"optimizer": opt})


def test_zoo_gnmt_defaults_to_its_reference_trainer():
    m = load_model(GNMT, dtype="fp16")
    kinds = {k.name for k in optimizer_kernels(1e6, m)}
    assert {"unscale_to_master", "master_to_model", "optimizer.param.addcdiv_"} <= kinds
    assert _bytes(m) == pytest.approx(_bytes(_model("fp16", implementation="per-tensor",
                                                    clip_grad_norm=True)))


def test_fused_adam_bytes_are_the_single_pass_formula():
    assert _bytes(_model("fp32")) == pytest.approx(1e6 * (3 * 4 + 2 * 8))
    assert _bytes(_model("fp16")) == pytest.approx(1e6 * (3 * 2 + 2 * 8 + 2 * 4 + 2))


def test_per_tensor_adam_is_eight_passes_of_its_ops():
    # m.mul_ 8 + m.add_ 12 + v.mul_ 8 + v.addcmul_ 12 + sqrt 8 + div 8 + add 8 + addcdiv_ 16
    assert _bytes(_model("fp32", implementation="per-tensor")) == pytest.approx(80e6)
    # apex O2: Adam on the fp32 master, plus unscale into it and the copy back (6 + 6 B)
    assert _bytes(_model("fp16", implementation="per-tensor")) == pytest.approx(92e6)
    kinds = {k.name for k in optimizer_kernels(1e6, _model("fp16", implementation="per-tensor"))}
    assert {"unscale_to_master", "master_to_model", "optimizer.param.addcdiv_"} <= kinds


def test_clip_grad_norm_reads_the_gradients_once_more():
    base = _bytes(_model("fp32", implementation="per-tensor"))
    clipped = _bytes(_model("fp32", implementation="per-tensor", clip_grad_norm=True))
    assert clipped - base == pytest.approx(4e6)


def test_per_tensor_is_slower_on_a_gpu():
    gpu = for_gpu(load_topology("dgx-a100:1x1").node.gpu)
    fused = optimizer_step_time(160e6, _model("fp16"), gpu)
    loop = optimizer_step_time(160e6, _model("fp16", implementation="per-tensor"), gpu)
    assert loop > 2.5 * fused


@pytest.mark.parametrize("bad, match", [({"implementation": "magic"}, "implementation"),
                                         ({"clip_grad_norm": 1}, "clip_grad_norm"),
                                         ({"lr": 1}, "unknown key")])
def test_bad_optimizer_override_is_one_line(bad, match):
    with pytest.raises(InputError, match=match):
        load_model(GNMT, overrides={"optimizer": bad})


def test_per_tensor_loop_launches_once_per_parameter_tensor():
    # a BERT encoder block holds 16 nn.Parameters (Q, K, V, O, FFN up/down: weight + bias;
    # two LayerNorms: weight + bias); torch.optim's loop launches each op once per tensor
    model = load_model("bert-large", overrides={"optimizer": {"name": "adam",
                                                              "implementation": "per-tensor"}})
    block = next(l for l in model.layers if l.kind == "transformer_encoder")
    assert block.kernels.param_tensors == 16
    launches = sum(k.count for k in optimizer_kernels(block.params, model, tensors=16))
    assert launches == 16 * 8                      # Adam's 8 elementwise ops per tensor
    gpu = for_gpu(load_topology("dgx-a100:1x1").node.gpu)
    assert (optimizer_step_time(block.params, model, gpu, tensors=16)
            > optimizer_step_time(block.params, model, gpu))   # default: 2 tensors per layer


def test_sparse_row_update_moves_its_bytes_once():
    # 100,000 touched rows of a 128-wide FP32 table under fused Adam: per element read
    # param + grad, write param (3 x 4 B), read+write m and v (2 x 8 B); 8-byte indices
    m = _model("fp32")
    assert m.table_bytes == 4
    rows, dim = 100_000, 128
    want_bytes = rows * dim * (3 * 4 + 2 * 8) + 8 * rows          # 359.2 MB
    ks = optimizer_kernels(rows * dim, m, kernels=1, index_bytes=8 * rows, table=True)
    assert sum(k.nbytes * k.count for k in ks) == pytest.approx(want_bytes)
    assert sum(k.count for k in ks) == 1


def test_sparse_step_is_the_coalesce_then_the_row_update_after_its_host_syncs():
    from embsim.workload.compute import sparse_apply_kernels, synced_kernels_time
    from embsim.workload.kernel_time import kernels_time
    from embsim.workload.precision import precision
    from embsim.workload.torch_coalesce import coalesce_kernels
    m = _model("fp32")
    gpu = for_gpu(load_topology("dgx-a100:1x1").node.gpu)
    rows, lookups, dim = 100_000, 400_000, 128
    parts = coalesce_kernels("optimizer", lookups, rows, dim, m.table_bytes)
    apply = sparse_apply_kernels(rows, dim, m)
    prec = precision(m.dtype)
    want = sum(kernels_time(p, gpu, prec, m.dtype_bytes) for p in parts[:-1]) + \
        kernels_time(parts[-1] + apply, gpu, prec, m.dtype_bytes)
    assert sparse_optimizer_step_time(rows, dim, m, gpu, lookups) == pytest.approx(want, rel=1e-12)
    assert synced_kernels_time(parts, gpu, prec, m.dtype_bytes) < want
    # with no lookups given, the rows are the gradient: sorted all the same, none repeated
    alone = sparse_optimizer_step_time(rows, dim, m, gpu)
    assert kernels_time(apply, gpu, prec, m.dtype_bytes) < alone < want


def test_plain_sgd_on_a_sparse_gradient_updates_per_lookup_not_per_row():
    # torch.optim.SGD's add_ of an uncoalesced sparse gradient is index_add_ over every
    # lookup's row (DLE DLRM: 26 x 65,536 rows of 128 FP32 per step)
    from embsim.workload.compute import uncoalesced_sgd_kernels
    gpu = for_gpu(load_topology("dgx-a100:1x1").node.gpu)
    lookups, rows, dim = 26 * 65536, 400_000, 128
    fp32 = load_model("dlrm-criteo-f15", dtype="fp32")
    names = [k.name for k in uncoalesced_sgd_kernels(lookups, dim, fp32)]
    assert names == ["optimizer.index_add", "optimizer.indices"]
    amp = load_model("dlrm-criteo-f15", dtype="fp16")
    assert amp.table_bytes == 4          # autocast: FP32 table, the scaler unscales its values
    assert [k.name for k in uncoalesced_sgd_kernels(lookups, dim, amp)][0] == "amp.unscale"
    per_lookup = sparse_optimizer_step_time(rows, dim, fp32, gpu, lookups)
    per_row = sparse_optimizer_step_time(rows, dim, fp32, gpu)
    assert per_lookup > 2 * per_row        # 1.7M atomic row updates against 0.4M rows
    # a stateful optimizer coalesces first: its sort runs over every lookup, its update
    # over the distinct rows
    adam = load_model("dlrm-criteo-f15", dtype="fp32", overrides={"optimizer": {"name": "adam"}})
    assert sparse_optimizer_step_time(rows, dim, adam, gpu, lookups) > \
        sparse_optimizer_step_time(rows, dim, adam, gpu)


def test_per_tensor_lamb_is_jitlamb_loop():
    """DLE Transformer-XL's JITLamb: five kernels per parameter tensor (moments + Adam step,
    two norms, the trust-ratio group, the update), then apex O2's master copies."""
    from embsim.workload import load_model
    from embsim.workload.compute import optimizer_kernels
    m = load_model("transformer-xl-base", dtype="fp16")
    ks = optimizer_kernels(1000.0, m, tensors=4)
    lamb = [k for k in ks if k.name.startswith("optimizer.lamb.")]
    assert len(lamb) == 5 and all(k.count == 4 for k in lamb)
    assert {"unscale_to_master", "master_to_model", "clip_grad_norm"} <= {k.name for k in ks}
    moments = next(k for k in lamb if k.name == "optimizer.lamb.moments_step")
    assert moments.nbytes * moments.count == pytest.approx(1000 * (4 + 6 * 4))

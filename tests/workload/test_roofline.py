"""Roofline estimates: monotone in work, bounded by the right roof, always labelled."""

from types import SimpleNamespace

import pytest

from embsim.workload import Layer, load_model
from embsim.workload.costs import Shape, linear_cost
from embsim.workload.roofline import (SOURCE, ComputeSpec, RooflineParams, layer_time,
                                      model_times, optimizer_step_time, roofline_time,
                                      sparse_optimizer_step_time)

# H100 SXM: 989 dense BF16 TFLOPS, 3.35 TB/s HBM3 (NVIDIA H100 datasheet)
H100 = ComputeSpec(peak_tflops=989, hbm_gbps=3350)


def test_roofline_is_max_of_roofs_plus_launches():
    t, bound = roofline_time(1e12, 1e6, 1e15, 1e12, kernels=2, compute_efficiency=0.5,
                             memory_efficiency=0.5, launch_overhead_s=1e-6)
    assert t == pytest.approx(1e12 / 5e14 + 2e-6) and bound == "compute"
    t, bound = roofline_time(1e3, 1e9, 1e15, 1e12, kernels=0, compute_efficiency=1,
                             memory_efficiency=0.5, launch_overhead_s=1e-6)
    assert t == pytest.approx(2e-3) and bound == "memory"
    with pytest.raises(ValueError):
        roofline_time(1, 1, 1, 1, compute_efficiency=0)


def test_monotone_in_flops_bytes_and_hardware():
    base = roofline_time(1e11, 1e9, 1e15, 3e12)[0]
    assert roofline_time(2e11, 1e9, 1e15, 3e12)[0] >= base
    assert roofline_time(1e11, 2e9, 1e15, 3e12)[0] >= base
    assert roofline_time(1e11, 1e9, 2e15, 6e12)[0] <= base


def test_layer_times_labelled_and_bounds_make_sense():
    bert = load_model("bert-base", batch=64)
    times = model_times(bert, H100)
    assert len(times) == len(bert.layers)
    assert all(t.source == SOURCE == "roofline estimate" for t in times)
    by_name = {t.name: t for t in times}
    assert by_name["encoder.0"].fwd_bound == "compute"
    assert by_name["word_embedding"].fwd_bound == "memory"      # a gather does no math
    assert by_name["embedding_norm"].fwd_bound == "memory"
    enc = by_name["encoder.0"]
    assert 1.5 * enc.fwd_s < enc.bwd_s < 2.5 * enc.fwd_s


def test_fp32_uses_the_fp32_ratio():
    # a 4096 x 4096 GEMM over 4096 tokens: compute-bound under every math mode
    c = linear_cost({"in": 4096, "out": 4096}, Shape(4, 1024, 4))
    layer = Layer("gemm", "linear", c.params, c.fwd_flops, c.bwd_flops, c.fwd_bytes,
                  c.bwd_bytes, c.grad_bytes, False, None, c.activation_bytes)
    fp32 = layer_time(layer, H100, 4).fwd_s
    tf32 = layer_time(layer, ComputeSpec(989, 3350, fp32_ratio=0.5), 4).fwd_s
    bf16 = layer_time(layer, H100, 2).fwd_s
    assert fp32 > tf32 > bf16
    assert fp32 == pytest.approx(8 * tf32, rel=0.01)         # 1/16 vs 1/2 of the bf16 rate


def test_compute_spec_from_a_topology_gpu():
    gpu = SimpleNamespace(bf16_tflops=312, hbm_gbps=2039)      # A100 SXM 80GB
    spec = ComputeSpec.from_gpu(gpu)
    assert spec.peak_tflops == 312 and spec.hbm_gbps == 2039


def test_optimizer_step_dense_vs_sparse_rows():
    m = load_model("lstm-lm1b")
    table = m.table("word")
    dense = optimizer_step_time(table.vocab * table.dim, m, H100)
    sparse = sparse_optimizer_step_time(2000, table.dim, m, H100)
    assert dense.source == sparse.source == "roofline estimate"
    assert dense.bound == "memory" and sparse.seconds < dense.seconds / 50
    slower = optimizer_step_time(table.vocab * table.dim, m, H100,
                                 RooflineParams(memory_efficiency=0.35))
    assert slower.seconds == pytest.approx(2 * dense.seconds, rel=0.01)


def test_gpu_fp32_rate_overrides_the_generic_ratio():
    from embsim.topology import load_topology
    rtx = ComputeSpec.from_gpu(load_topology("pcie-rtx3090").node.gpu)
    h100 = ComputeSpec.from_gpu(load_topology("dgx-h100").node.gpu)
    assert rtx.flops_per_s(4) == pytest.approx(35.6e12)      # consumer GPU: half its FP16 tensor rate
    assert h100.flops_per_s(4) == pytest.approx(67e12)
    assert h100.flops_per_s(2) == pytest.approx(989e12)

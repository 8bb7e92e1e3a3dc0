import pytest

from embsim.topology.clusterspec import load_topology
from embsim.workload.gpu_compute import for_gpu
from embsim.workload.kernel_time import kernel_time, kernels_time
from embsim.workload.kernels import gemm, stream
from embsim.workload.l2_reuse import l2_hit_bytes, produced_bytes
from embsim.workload.precision import precision


def gpu(name):
    return for_gpu(load_topology(name).node.gpu)


@pytest.fixture(scope="module")
def a100():
    return gpu("dgx-a100")


def test_capacity_is_one_partition_of_the_whitepaper_l2(a100):
    assert a100.l2_reuse_bytes == 20e6              # 40 MB over two partitions
    assert a100.l2_read_bps == pytest.approx(5.40e12)   # measured basis, not 5120 B/clk x clock
    assert gpu("dgx1-v100").l2_reuse_bytes == 6e6   # one partition
    assert gpu("dgx-h100").l2_reuse_bytes == 25e6


def test_no_rule_without_the_figures():
    assert gpu("dgx-b200").l2_reuse_bytes == 0      # no published B200 L2 size
    assert gpu("pcie-rtx3090").l2_reuse_bytes == 0  # a size but no L2 bandwidth figure
    assert gpu("local-cpu").l2_reuse_bytes == 0


def test_producer_is_a_gemm_output_but_not_a_weight_gradient():
    assert produced_bytes(gemm("x.gemm", 1000, 1024, 1024), 2) == 1000 * 1024 * 2
    assert produced_bytes(gemm("x.dgrad", 1000, 1024, 1024), 2) == 1000 * 1024 * 2
    assert produced_bytes(gemm("x.wgrad", 1024, 1024, 1000), 2) == 0
    assert produced_bytes(stream("x", 1e6), 2) == 0
    assert produced_bytes(None, 2) == 0


def test_hit_only_when_the_tensor_fits(a100):
    k = stream("act", 2 * 8e6)
    assert l2_hit_bytes(k, 8e6, a100) == 8e6
    assert l2_hit_bytes(k, 21e6, a100) == 0          # larger than a partition: all evicted
    assert l2_hit_bytes(stream("small", 1e6), 8e6, a100) == 0.5e6   # at most half its bytes
    assert l2_hit_bytes(stream("lstm", 1e6, recurrent=True, count=4), 1e5, a100) == 0


def test_a_kernel_after_a_fitting_gemm_is_faster_on_a100_not_v100():
    p = precision("fp16")
    n, h = 4096, 1024                                # 8.4 MB fp16 output
    ks = [gemm("o.gemm", n, h, h), stream("o.dropout", n * h * 5, pointwise=True)]
    for name, faster in (("dgx-a100", True), ("dgx1-v100", False)):
        g = gpu(name)
        alone = sum(kernel_time(k, g, p, 2).gpu_s for k in ks)
        chained = kernels_time(ks, g, p, 2)
        assert (chained < alone) is faster, name
    # the saving is the hit bytes at L2 instead of HBM bandwidth, same framework fraction
    g = gpu("dgx-a100")
    hit = n * h * 2
    f = g.memory_fraction(ks[1].mechanism)
    full = kernel_time(ks[1], g, p, 2).gpu_s
    assert kernel_time(ks[1], g, p, 2, hit).gpu_s == pytest.approx(
        full - hit / (g.hbm_bps * g.hbm_fraction * f) + hit / (g.l2_read_bps * f))

"""collectives/one_rank.py: a one-rank collective is NCCL's copy of the send buffer into
the receive buffer (ncclLaunchOneRank): a launch plus a read and a write at the GPU's
streaming bandwidth, the compute model's own figures."""

import pytest

from embsim.collectives.one_rank import one_rank_copy
from embsim.topology import load_topology
from embsim.workload.gpu_compute import for_gpu


def test_a_launch_then_two_passes_over_the_buffer_at_hbm_speed():
    spec = load_topology("dgx-h100:1x1").node.gpu
    gpu = for_gpu(spec)
    small, big = one_rank_copy("all_reduce", 8, spec), one_rank_copy("all_reduce", 1 << 30, spec)
    assert small.seconds == pytest.approx(gpu.launch_s, rel=1e-4)
    assert big.seconds == pytest.approx(gpu.launch_s + 2 * (1 << 30) / (gpu.hbm_bps * gpu.hbm_fraction))
    assert "one rank" in big.note and "all_reduce busbw is 0 by definition" in big.note
    # nccl-tests keeps factor 1 for broadcast: its busbw is its algbw, not 0
    assert "busbw" not in one_rank_copy("broadcast", 8, spec).note
    assert "H100-SXM5-80GB HBM 3,350 GB/s" in big.note
    # a slower memory copies slower
    assert one_rank_copy("all_reduce", 1 << 30, load_topology("dgx-a100:1x1").node.gpu).seconds > big.seconds

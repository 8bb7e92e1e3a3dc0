"""gpu.gemm_fractions in a topology file: per-dtype large-GEMM fractions, checked."""

import pytest

from embsim.topology import TopologyError, load_topology
from embsim.workload.gpu_compute import for_gpu
from embsim.workload.precision import precision

from topology_samples import SMALL_PCIE, write_yaml  # noqa: F401 (fixture)


def _gpu_yaml(extra):
    return SMALL_PCIE.replace("  hbm_gbps: 1000\n", "  hbm_gbps: 1000\n" + extra, 1)


def test_gemm_fractions_parse(write_yaml):
    text = _gpu_yaml("  gemm_fraction: 0.6\n  gemm_fractions: {bf16: 0.8}\n")
    g = for_gpu(load_topology(str(write_yaml(text))).node.gpu)
    assert g.gemm_fraction_for(precision("bf16")) == 0.8
    assert g.gemm_fraction_for(precision("fp32")) == 0.6
    assert "for fp16, fp32 (0.6 used)" in g.label


@pytest.mark.parametrize("extra,expect", [
    ("  gemm_fractions: {fp8: 0.7}\n", "no fp8 rate"),          # the GPU has no FP8 rate
    ("  gemm_fractions: {bf16: 1.5}\n", "must be <= 1"),
    ("  gemm_fractions: {int4: 0.5}\n", "unknown key"),
    ("  gemm_fractions: 0.5\n", "must be a mapping"),
])
def test_bad_gemm_fractions(write_yaml, extra, expect):
    path = write_yaml(_gpu_yaml(extra))
    with pytest.raises(TopologyError) as info:
        load_topology(str(path))
    msg = str(info.value)
    assert "gemm_fractions" in msg and expect in msg and "\n" not in msg


def test_one_fraction_for_every_dtype_is_named(write_yaml):
    g = for_gpu(load_topology(str(write_yaml(_gpu_yaml("  gemm_fraction: 0.6\n")))).node.gpu)
    assert g.gemm_fraction_for(precision("fp16")) == 0.6
    assert "measured GEMM efficiency per dtype (one 0.6 for every dtype)" in g.label

"""The per-tile GEMM overhead and V100's large-GEMM fraction are what the fit on
DeepBench's V100 GEMM results gives, and the fit beats the overhead-free model."""

import pytest
import yaml

from embsim.workload import gemm_fit
from embsim.workload.gemm_fit import V100_GEMM_FRACTION, errors, filling, fit, load_rows
from embsim.workload.kernel_time import TILE_OVERHEAD_K, gemm_compute_s
from pathlib import Path


@pytest.fixture(scope="module")
def result():
    return fit()


def test_shipped_constants_are_the_fit(result):
    assert TILE_OVERHEAD_K == result.tile_overhead_k
    assert V100_GEMM_FRACTION == result.gemm_fraction
    preset = yaml.safe_load((Path(__file__).resolve().parents[2] / "topologies" / "dgx1-v100.yaml").read_text())
    assert preset["gpu"]["gemm_fraction"] == result.gemm_fraction


def test_data_set_is_the_published_one():
    rows = load_rows()
    assert len(rows) == 320 and {r.precision for r in rows} == {"fp16", "fp32"}
    big = filling([r for r in rows if r.precision == "fp16"])
    assert len(big) == 74 and all(r.m * r.n >= 80 * 256 * 128 for r in big)


def test_fit_explains_the_filling_shapes(result):
    assert result.rows == 74
    assert result.mean_abs_error < 0.05 and result.max_abs_error < 0.2
    rows = filling([r for r in load_rows() if r.precision == "fp16"])
    flat = errors(rows, 0.0, result.gemm_fraction)
    fitted = errors(rows, result.tile_overhead_k, result.gemm_fraction)
    assert sum(map(abs, fitted)) < sum(map(abs, flat))


def test_overhead_costs_shallow_products_more():
    gpu = gemm_fit.V100
    deep = gemm_compute_s(8192, 8192, 8192, 1, 1e14, gpu, 80.0, 200.0) / gemm_compute_s(8192, 8192, 8192, 1, 1e14, gpu, 80.0, 0.0)
    shallow = gemm_compute_s(8192, 8192, 1024, 1, 1e14, gpu, 80.0, 200.0) / gemm_compute_s(8192, 8192, 1024, 1, 1e14, gpu, 80.0, 0.0)
    assert 1.0 < deep < 1.05 < shallow


def test_fixed_time_overhead_explains_the_held_out_fp32_sheet(result):
    # the overhead is a fixed time: FP32 (8x slower k-steps on V100) pays 200 x 15.7 / 125
    rows = filling([r for r in load_rows() if r.precision == "fp32"])
    errs = errors(rows, result.tile_overhead_k, result.gemm_fraction)
    assert sum(map(abs, errs)) / len(errs) < 0.04 and max(map(abs, errs)) < 0.1
    from embsim.workload.gemm_fit import V100
    from embsim.workload.kernel_time import tile_overhead_k
    from embsim.workload.precision import precision
    assert tile_overhead_k(V100, precision("fp32")) == pytest.approx(200 * 15.7 / 125)
    assert tile_overhead_k(V100, precision("fp16")) == TILE_OVERHEAD_K

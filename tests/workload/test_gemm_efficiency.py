"""Per-dtype large-GEMM fractions: derived from the cited measurements, read from the
presets, used by the GEMM model, and named in the label where a dtype has none."""

import pytest
import yaml

from embsim.topology import find_preset, load_topology
from embsim.workload.gemm_efficiency import CUBE, MAMF, cube_over_mamf, derive
from embsim.workload.gpu_compute import for_gpu
from embsim.workload.kernel_time import kernel_time
from embsim.workload.kernels import gemm
from embsim.workload.precision import precision

PRESETS = {"dgx-a100": "A100", "dgx-a100-40gb": "A100", "dgx-h100": "H100", "aws-p5": "H100",
           "gcp-a3-mega": "H100", "dgx-h200": "H200", "dgx-b200": "B200", "aws-p6-b200": "B200",
           "gb200-nvl72": "GB200", "aws-p4d": "A100", "aws-p4de": "A100",
           # no Blackwell Ultra measurement: B200's / GB200's, said by gpu.fractions_from
           "dgx-b300": "B200", "gb300-nvl72": "GB200"}


@pytest.mark.parametrize("preset,gpu", sorted(PRESETS.items()))
def test_presets_hold_the_derived_fractions(preset, gpu):
    with open(find_preset(preset)) as f:
        shipped = yaml.safe_load(f)["gpu"]["gemm_fractions"]
    derived = {k: round(d.fraction, 3) for k, d in derive()[gpu].items()}
    assert shipped == derived


def test_every_figure_is_a_fraction_of_its_peak():
    for m in CUBE + MAMF:
        assert 0.5 < m.fraction < 0.9, m


def test_best_shape_search_overstates_the_cube():
    # why MAMF figures only enter as ratios: where a GPU has both, the search's best shape
    # beats the fixed cube
    ratios = cube_over_mamf()
    assert all(r > 1.0 for r in ratios.values())
    assert ratios["H100"] == pytest.approx(1.015, abs=0.002)


def test_bf16_and_fp8_differ_on_hopper():
    per = derive()["H100"]
    assert per["bf16"].fraction > per["fp8"].fraction + 0.05
    assert per["fp16"].fraction == per["bf16"].fraction


def tflops(g, shape, dtype):
    p = precision(dtype)
    k = gemm("x", *shape)
    return k.flops / kernel_time(k, g, p, p.storage_bytes).gpu_s / 1e12


def test_gemm_model_uses_each_dtypes_fraction():
    h100 = for_gpu(load_topology("dgx-h100").node.gpu)
    cube = (32768, 32768, 32768)
    # the Azure FP8 measurement, and BF16 at its own fraction of its own peak
    assert tflops(h100, cube, "fp8") == pytest.approx(1382.2, rel=0.01)
    assert tflops(h100, cube, "bf16") == pytest.approx(989 * 0.792, rel=0.01)
    # TF32 has no figure of its own: the single gemm_fraction, and the label says so
    assert tflops(h100, cube, "tf32") == pytest.approx(494.5 * 0.698, rel=0.01)
    assert "GEMM efficiency per dtype for tf32, fp32 (0.698 used)" in h100.label


def test_single_figure_gpu_says_it_is_used_for_every_dtype():
    turing = for_gpu(load_topology("pcie-rtx2080ti").node.gpu)
    assert "measured GEMM efficiency (0.7 used)" in turing.label    # no figure at all
    l40s = for_gpu(load_topology("l40s-roce").node.gpu)       # FP16/BF16/FP32 measured, TF32/FP8 not
    assert "GEMM efficiency per dtype for tf32, fp8 (0.736 used)" in l40s.label
    v100 = for_gpu(load_topology("dgx1-v100").node.gpu)       # both DeepBench sheets
    assert v100.gemm_fractions == {"fp16": 0.87, "fp32": 0.87} and "GEMM" not in v100.label


def test_a100_tf32_is_the_cube_moved_by_the_cutlass_peaks():
    # FP16 and TF32 peaks from one statement (CUDA 11.3): TF32 reaches 0.96 of FP16's fraction
    from embsim.workload.gemm_efficiency import CUTLASS
    tf32 = derive()["A100"]["tf32"]
    assert {m.build for m in CUTLASS} == {"CUTLASS profiler, CUDA 11.3"}
    assert tf32.fraction == pytest.approx(0.822 * (143 / 156) / (298 / 312), rel=1e-3)
    assert tf32.fraction < derive()["A100"]["fp16"].fraction
    a100 = for_gpu(load_topology("dgx-a100").node.gpu)
    assert tflops(a100, (16384,) * 3, "tf32") == pytest.approx(156 * 0.789, rel=0.01)
    assert "per dtype for fp32 (0.822 used)" in a100.label


def test_cpu_says_every_dtype_runs_at_its_one_measured_matmul_rate():
    cpu = for_gpu(load_topology("local-cpu").node.gpu)
    assert len(set(cpu.rates.values())) == 1
    assert "the measured one used for fp32, tf32, bf16 and fp16" in cpu.label

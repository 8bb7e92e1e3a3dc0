"""Published eager-PyTorch LayerNorm timings on A100 against the kernel model: the V100
per-kernel fractions reproduce them within the A100 variant's spread, the transformer-block
fraction charges them far more, and the measured single passes sit below V100's stream class."""

import pytest

from embsim.workload import norm_check
from embsim.workload.gpu_props import MECHANISM_EFFICIENCY


@pytest.fixture(scope="module")
def summaries():
    return {name: norm_check.summarise(norm_check.preset_gpu(name)) for name in norm_check.PRESETS}


def test_data_sets_are_the_published_ones():
    rows = norm_check.load_rows()
    assert len(rows) == 98          # 7 x 7 shapes, FP32 and FP16
    last = [r for r in rows if (r.rows, r.features) == (8192, 4096)]
    assert [(r.dtype, r.seconds) for r in last] == [("fp32", pytest.approx(1043.5e-6)),
                                                    ("fp16", pytest.approx(509e-6))]
    passes = norm_check.load_pass_rows()
    assert len(passes) == 8
    # the harness's bytes: 2 tensors forward, 3 backward, at 16 bits
    fwd = passes[0]
    assert fwd.seconds == pytest.approx(2 * 4096 * 4096 * 2 / 936.228546e9)


def test_host_floor_leaves_the_gpu_bound_rows():
    bound = norm_check.gpu_bound(norm_check.load_rows())
    assert len(bound) == 19
    assert all(r.rows * r.features >= 2 ** 23 for r in bound)


def test_v100_per_kernel_fractions_bracket_a100(summaries):
    big, small = summaries["dgx-a100-40gb"], summaries["dgx-a100"]
    # 40 GB: the model is slow, 80 GB: fast; the measurement lies between the two presets
    assert 0.0 < big.mean_error < 0.2 and min(big.errors) > -0.05
    assert -0.2 < small.mean_error < 0.0 and max(small.errors) < 0.05


def test_block_fraction_overcharges_every_row(summaries):
    for s in summaries.values():
        assert min(s.layer_errors) > 0.2


def test_a100_single_passes_do_not_beat_v100_stream_class(summaries):
    for s in summaries.values():
        assert max(s.pass_fractions) < MECHANISM_EFFICIENCY["stream"]
        assert max(s.fractions) < MECHANISM_EFFICIENCY["stream"]


def test_report_names_both_presets():
    text = norm_check.report()
    assert "dgx-a100-40gb" in text and "dgx-a100 (" in text and "#87445" in text


def test_main_takes_no_arguments(capsys):
    with pytest.raises(SystemExit) as exc:
        norm_check.main(["--bogus"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1 and "--bogus" in err

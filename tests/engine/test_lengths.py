"""--lengths values that used to overflow or mean nothing: refused in one line."""

import numpy as np
import pytest

from embsim import cli
from embsim.engine.lengths import MAX_RATIO_SIGMA, drawn_lengths, drawn_pairs, parse_lengths, ratio_sigma
from embsim.errors import InputError


@pytest.mark.parametrize("text", [
    "lognormal:1e300:1e300",    # drew ~1e300 tokens: int64 cast went negative (bincount ValueError)
    "lognormal:1e-300:1",       # (SD / MEAN)^2 overflowed (OverflowError)
    "lognormal:10:1e300",
    "lognormal:0.5:1",          # a sentence of half a token
    "lognormal:2e6:10",
])
def test_lognormal_moments_out_of_range(text):
    with pytest.raises(InputError, match=r"^--lengths .*MEAN must be 1\.\.1,000,000 tokens"):
        parse_lengths(text)


def test_the_largest_accepted_moments_draw_finite_positive_lengths():
    for text in ("lognormal:1000000:1000000", "lognormal:1:1000000", "lognormal:1000000:1"):
        drawn = drawn_lengths(text, seed=0)
        assert drawn.min() >= 1 and drawn.max() < 2 ** 40, text


@pytest.mark.parametrize("text", ["wikipedia,ratio:1e300", "wikipedia,ratio:inf", "wikipedia,ratio:nan",
                                  "wikipedia,ratio:-0.1", "wikipedia,ratio:1.01", "wikipedia,ratio:"])
def test_ratio_sigma_out_of_range(text):
    with pytest.raises(InputError, match=r"^--lengths .*ratio:SIGMA \(SIGMA 0\.\.1,"):
        parse_lengths(text)


def test_the_widest_ratio_keeps_targets_finite():
    assert ratio_sigma(f"lognormal:1000000:1000000,ratio:{MAX_RATIO_SIGMA}") == MAX_RATIO_SIGMA
    src, tgt = drawn_pairs(f"lognormal:1000000:1000000,ratio:{MAX_RATIO_SIGMA}", seed=0)
    assert tgt.min() >= 1 and np.isfinite(tgt.astype(float)).all() and tgt.max() < 2 ** 50


def test_empty_lengths_is_refused_not_ignored():
    assert parse_lengths(None) is None
    with pytest.raises(InputError, match="^--lengths '': expected"):
        parse_lengths("")


def test_cli_one_line_exit_2(capsys):
    argv = ["simulate", "--model", "tiny-lm", "--topology", "1x2", "--iterations", "2", "--padding", "longest:8"]
    for bad in ("lognormal:1e300:1e300", "lognormal:1e-300:1", "wikipedia,ratio:1e300", ""):
        assert cli.main(argv + ["--lengths", bad]) == 2, bad
        err = capsys.readouterr().err.strip()
        # "" is refused at the flag (commands.checks.refuse_empty): "Invalid value for '--lengths'"
        assert len(err.splitlines()) == 1 and err.startswith("embsim: error:") and "--lengths" in err, err

"""ll128_rate: the figures behind the A100 Ring/LL128 gap note (collective_notes.md) and the
premises of the candidates it rules out, so a change to the channel model, the LL128
constants or the curves that invalidates the note fails here."""

import math

import pytest

from embsim.collectives.ll128_rate import (WARP_ROUND_BYTES, Ll128Point, ll128_points, marginal_rates,
                                           report)
from embsim.collectives.pipeline import step_bytes
from embsim.collectives.validation import DATA_DIR

AZURE = DATA_DIR / "azure-nd-a100-v4-allreduce.yaml"          # NCCL 2.18.5
MODAL = DATA_DIR / "ext2-modal-a100-40gb-1x8-g8-all-reduce.yaml"  # NCCL 2.29.3 (held out: a check only)


def test_source_constants():
    # device.h: 32 threads x NCCL_LL128_SHMEM_ELEMS_PER_THREAD (8) u64, 15 of 16 data
    assert WARP_ROUND_BYTES == 1920
    # NCCL_LL128_ELEMS_PER_THREAD 120 x 640 threads x 8 B per slot, 15/16 of it data
    assert step_bytes("LL128") == 576000


@pytest.mark.parametrize("curve, sizes", [(AZURE, [2 << 20, 4 << 20, 8 << 20, 16 << 20]),
                                          (MODAL, [4 << 20, 8 << 20, 16 << 20])])
def test_a100_ll128_launch_is_untrimmed(curve, sizes):
    """Candidate (2): 24 CTAs of 640 threads at every LL128 point, in 2.18.5 and 2.29.3
    (enqueue.cc trims only below 24 x 640 x NCCL_LL128_THREAD_THRESHOLD = 122880 B)."""
    points, hop = ll128_points(curve)
    assert [p.size for p in points] == sizes
    assert {(p.channels, p.threads) for p in points} == {(24, 640)}
    assert hop == 1.9                       # tuning.cc hwLat[NVLINK][Ring][LL128]


def test_a100_gap_is_a_rate_not_a_per_round_or_in_flight_limit():
    points, hop = ll128_points(AZURE)
    by = {p.size: p for p in points}
    # candidate (3): 2 and 4 MiB run one round per warp per step, yet 4 MiB takes 34 µs more
    assert by[2 << 20].rounds == by[4 << 20].rounds == 1
    assert [p.rounds for p in points] == [1, 1, 2, 3]
    assert by[4 << 20].measured_us - by[2 << 20].measured_us > 30
    # candidate (1): at 4-16 MiB the bytes a CTA can have in flight per NVLink hop allow
    # >= 2x the rate the curve implies; only 2 MiB's one small chunk is near it
    for p in points[1:]:
        assert p.inflight_bound(hop) > 2.0 * p.implied_rate
    # the measured rate: 0.6-0.7 of the model's at every size, 107-139 GB/s per GPU at the margin
    assert all(0.6 < p.ratio < 0.72 for p in points)
    assert all(100 < rate < 145 for _, _, rate in marginal_rates(points))


def test_rate_does_not_follow_the_release():
    """2.18.5 (Azure) and 2.29.3 (Modal) move LL128 data at the same marginal rate (within 10 %)."""
    azure = {(a, b): r for a, b, r in marginal_rates(ll128_points(AZURE)[0])}
    modal = {(a, b): r for a, b, r in marginal_rates(ll128_points(MODAL)[0])}
    shared = sorted(set(azure) & set(modal))
    assert shared == [(4 << 20, 8 << 20), (8 << 20, 16 << 20)]
    for key in shared:
        assert abs(modal[key] / azure[key] - 1) < 0.10


def _point(size, t):
    return Ll128Point(size, t, 40.0, 10.0, 200.0, 24, 640, size / 192, 1.75)


def test_marginal_and_implied_arithmetic():
    a, b = _point(1_000_000, 50.0), _point(3_000_000, 60.0)
    assert marginal_rates([a, b]) == [(1_000_000, 3_000_000, pytest.approx(1.75 * 2e6 / 1e4))]
    assert marginal_rates([b, a]) == []                       # a time that falls is skipped
    assert a.implied_rate == pytest.approx(1.75 * 1e6 / 1e4)
    assert _point(1_000_000, 40.0).implied_rate == math.inf   # nothing left after the latency
    # window = min(chunk, 20 warps x 1920 B, 8 slots): 5208 B per CTA per 2 µs hop
    assert a.inflight_bound(2.0) == pytest.approx(24 * (1_000_000 / 192) / 2000.0)


def test_report_lists_points_and_margins():
    text = report(AZURE)
    assert "24x640" in text and "marginal 8->16 MiB" in text
    assert report(DATA_DIR / "h100-slurm-1x8-all-gather.yaml").endswith(": none")


def test_main_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    from embsim.collectives.ll128_rate import main
    (tmp_path / "bad.yaml").write_text("busbw: [\n")
    for argv, words in ([str(tmp_path / "none.yaml")], "none.yaml: no such file"), \
                       ([str(tmp_path / "bad.yaml")], "bad.yaml (line 2): not valid YAML"):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and words in err, err
    with pytest.raises(SystemExit) as exc:
        main(["--bogus"])
    assert exc.value.code == 2 and "--bogus" in capsys.readouterr().err
    assert main([str(AZURE)]) == 0 and "24x640" in capsys.readouterr().out


GB200 = DATA_DIR / "azure-nd-gb200-v6-allreduce.yaml"


def test_peer_write_hypothesis_does_not_explain_the_a100_gap():
    """Candidate (5): a per-GPU cap on SM stores. Every Azure Ring/LL128 point puts fewer bytes
    on the wire (16/15 of its data) than the slowest published both-ways A100 SM write, and
    0.57-0.64 of the fastest; the GB200 tray's LL128 runs at 0.75-0.78 of its own, where the
    stores are not slower than the loads -- a shortfall against the SM copy rate on both GPUs."""
    from embsim.collectives.ll128_rate import wire_range
    from embsim.collectives.peer_copy_rates import figures
    a100_writes = [f.per_direction for f in figures(80, "write", True)]
    lo, hi = wire_range(ll128_points(AZURE)[0], "LL128")
    assert 125 < lo < hi < 141 and hi < min(a100_writes)
    assert 0.56 < lo / max(a100_writes) < hi / max(a100_writes) < 0.65
    # the open lead (cross-host): against the HGX host's slowest / fastest both-ways pair
    assert 0.82 < lo / min(a100_writes) < hi / min(a100_writes) < 0.92
    gb_lo, gb_hi = wire_range(ll128_points(GB200)[0], "LL128")
    gb_write = max(f.per_direction for f in figures(100, "write", True))
    assert 0.74 < gb_lo / gb_write < gb_hi / gb_write < 0.79


def test_wire_rate_factors():
    from embsim.collectives.ll128_rate import WIRE_PER_DATA
    assert WIRE_PER_DATA == {"LL128": 16 / 15, "LL": 2.0}     # device.h line layouts
    p = _point(1_000_000, 50.0)
    assert p.wire_rate == pytest.approx(p.implied_rate * 16 / 15)


def test_report_sets_ll128_against_the_published_copy_rates():
    text = report(AZURE)
    assert "published SM peer write (sm80)" in text and "Ring/LL128 wire / fastest both-ways SM write" in text
    assert "Ring/LL  1048576 at 24x512" in text           # the one untrimmed LL point of the curve

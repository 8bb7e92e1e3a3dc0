"""peer_copy_rates: the published SM peer-copy figures the A100 Ring/LL128 note tests the
peer-write hypothesis against (collective_notes.md). Pins the arithmetic (a printed SUM over
pairs and directions -> GB/s per direction) and the verdicts the note draws from them."""

import pytest

from embsim.collectives.peer_copy_rates import FIGURES, PeerCopy, figures, write_over_read


def test_every_figure_is_sourced_and_well_formed():
    for f in FIGURES:
        assert f.kind in ("write", "read") and f.arch in (80, 90, 100)
        assert f.pairs >= 1 and f.directions in (1, 2)
        assert f.source.startswith("github.com/") and "@" in f.source


def test_per_direction_divides_the_printed_figure():
    # nvbandwidth v0.2 on 8 H800: the bidirectional SUM adds both directions of 56 ordered pairs
    assert PeerCopy(90, "write", True, 18341.61, 56, 2, "x").per_direction == pytest.approx(163.76, abs=0.01)
    # SuperBench gpu_copy: one pair, 2 x size / the slower stream's time
    assert PeerCopy(80, "write", True, 440.023, 1, 2, "x").per_direction == pytest.approx(220.01, abs=0.01)


def test_a100_sm_stores_run_within_5_percent_of_its_loads():
    """The hypothesis wanted ~150 against ~236 (0.64); the same tool on the same A100 host
    gives 0.99 one way and 0.96 both ways."""
    one, both = write_over_read(80, False), write_over_read(80, True)
    assert len(one) == 2 and all(0.98 < r < 1.0 for r in one)
    assert len(both) == 2 and all(0.95 < r < 0.96 for r in both)
    # both ways, the fastest published A100 write keeps 214-220 GB/s per direction
    assert 219 < max(f.per_direction for f in figures(80, "write", True)) < 221


def test_hopper_and_blackwell_stores_are_not_slower_both_ways():
    assert all(0.98 < r < 1.0 for r in write_over_read(90, False))      # H800 one way
    assert all(1.0 < r < 1.1 for r in write_over_read(90, True))        # H800 both ways
    assert all(0.9 < r < 0.92 for r in write_over_read(100, False))     # GB200 one way
    assert all(1.0 < r < 1.06 for r in write_over_read(100, True))      # GB200 both ways


def test_figures_filters():
    assert figures(80, "read", True) and not figures(70)
    assert {f.kind for f in figures(100)} == {"write", "read"}


def test_the_open_lead_is_across_hosts():
    """The HGX A100 p2pBandwidthLatencyTest host (YanBC) writes 153-194 GB/s per direction both
    ways and publishes no read; against the Azure host's nvbandwidth read that is 0.72-0.92,
    but no single A100 NVSwitch host published both (the note's 'measurement still missing')."""
    yanbc = [f.per_direction for f in figures(80, "write", True) if "YanBC" in f.source]
    azure_read = [f.per_direction for f in figures(80, "read", True) if "Azure/AI-benchmarking-guide" in f.source]
    assert [round(r, 1) for r in yanbc] == [153.0, 194.1] and azure_read == [211.5]
    assert 0.72 < min(yanbc) / azure_read[0] < max(yanbc) / azure_read[0] < 0.92
    assert not [f for f in figures(80, "read") if "YanBC" in f.source]

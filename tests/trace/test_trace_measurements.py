"""Trace keys added for validation: untied steps, interference, rank skew, in-step timings."""

import dataclasses

import pytest

from embsim.trace import (InterferenceMeasurement, RankSkew, TraceError, dump_trace, load_trace,
                          parse_trace, write_trace)

from test_trace_schema import make_trace


def full_trace():
    t = make_trace()
    step = dataclasses.replace(t.steps["allreduce"], untied_outputs=True)
    layer = dataclasses.replace(t.layers["embed"], timed="in-step")
    return dataclasses.replace(
        t, steps={"allreduce": step}, layers={"embed": layer},
        interference=InterferenceMeasurement("embed", 4, "all_reduce", 1 << 20, 10e-3, 4e-3,
                                             12e-3, 5, comm_overlapped_s=6e-3),
        rank_skew=RankSkew(4, 20e-3, 22e-3, 5))


def test_round_trip(tmp_path):
    back = load_trace(write_trace(tmp_path / "t.yaml", full_trace()))
    assert back.steps["allreduce"].untied_outputs is True
    assert back.layers["embed"].timed == "in-step"
    assert back.interference == full_trace().interference
    assert back.rank_skew.factor == pytest.approx(1.1)
    assert dump_trace(back) == dump_trace(full_trace())


def test_old_files_without_the_keys_still_load():
    back = parse_trace(dump_trace(make_trace()), "old.yaml")
    assert back.interference is None and back.rank_skew is None
    assert back.steps["allreduce"].untied_outputs is False
    assert back.layers["embed"].timed == "isolated"


def test_interference_factor_is_the_engines():
    # r = (both - alone) / comm = 0.5: the engine makes a collective cost f/(1+f) of its time
    m = InterferenceMeasurement("x", 1, "all_reduce", 4, 10e-3, 4e-3, 12e-3, 3)
    assert m.overlap_cost == pytest.approx(0.5) and m.factor == pytest.approx(1.0)
    hidden = dataclasses.replace(m, both_s=9e-3)             # faster together: no interference
    assert hidden.factor == 0.0
    serial = dataclasses.replace(m, both_s=20e-3)            # worse than serial: clipped
    assert serial.overlap_cost == pytest.approx(0.99) and serial.factor == pytest.approx(99.0)


def test_bad_values_rejected():
    text = dump_trace(full_trace())
    with pytest.raises(TraceError, match="timed"):
        parse_trace(text.replace("timed: in-step", "timed: guessed"), "t.yaml")
    with pytest.raises(TraceError, match="alone_us"):
        parse_trace(text.replace("alone_us: 10000.0", "alone_us: 0.0"), "t.yaml")
    with pytest.raises(TraceError, match="unknown key|unexpected|not allowed|allowed"):
        parse_trace(text.replace("rank0_us:", "rank_0_us:"), "t.yaml")

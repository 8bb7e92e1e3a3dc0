"""A trace's measured collective curve used beyond its largest swept size is timed at that
point's bandwidth, and the run says so (probe N: a quick calibration sweeps to 256 KiB, a
recommender's all-reduce was 1.4-3.2 MB, and nothing said the time was extrapolated)."""

from embsim.collectives.model import CollectiveModel
from embsim.engine.run import beyond_measured_label
from embsim.topology import load_topology

CURVE = ((1024, 65536, 1 << 20), (50e-6, 120e-6, 900e-6))


def model():
    return CollectiveModel(load_topology("local-cpu:1x2"), measured={("all_reduce", 2): CURVE})


def test_inside_the_sweep_nothing_is_said():
    m = model()
    m.plan("all_reduce", 4096, (0, 1))
    m.plan("all_reduce", 1 << 20, (0, 1))
    assert m.beyond_measured == {}


def test_beyond_it_the_largest_ask_is_named():
    m = model()
    plan = m.plan("all_reduce", 4 << 20, (0, 1))
    m.plan("all_reduce", 3 << 20, (0, 1))
    assert plan.time >= 4 * 900e-6 * 0.999                       # the last point's bandwidth
    assert m.beyond_measured == {("all_reduce", 2): 4 << 20}
    assert beyond_measured_label(m) == ("measured curves asked beyond their swept sizes, timed at "
                                        "the last point's bandwidth: all_reduce at 2 ranks up to "
                                        "4.0 MiB (swept to 1.0 MiB)")

"""Small messages run on a trimmed launch (fewer channels/threads); the simulated time
must still grow with the size when the algorithm and protocol stay the same."""

import pytest

from embsim.collectives import CollectiveModel
from embsim.collectives.channels import runtime_fraction
from embsim.collectives.trimming import trimmed_slowdown
from embsim.topology import load_topology


@pytest.mark.parametrize("spec,op", [("128x8", "all_gather"), ("128x8", "all_reduce"),
                                     ("dgx-a100", "all_reduce"), ("16x8", "reduce_scatter")])
def test_time_grows_with_size_within_one_algorithm(spec, op):
    topo = load_topology(spec)
    model = CollectiveModel(topo)
    ranks = tuple(range(topo.n_gpus))
    sizes = [2 ** k * topo.n_gpus * 4 for k in range(4, 18)]
    plans = [model.plan(op, s, ranks) for s in sizes]
    for a, b in zip(plans, plans[1:]):
        if (a.algo, a.proto) == (b.algo, b.proto):
            assert b.time >= a.time * (1 - 1e-9), (a.nbytes, a.time, b.nbytes, b.time, a.algo, a.proto)


def test_capped_protocol_loses_less_than_proportionally_when_trimmed():
    # Ring LL at 1024 ranks is capped by llMaxBw; a launch on a few channels is slower,
    # but not by the full channel ratio (the cap, not the channels, limited it).
    topo = load_topology("128x8")
    model = CollectiveModel(topo, algo="Ring", proto="LL")
    ranks = tuple(range(topo.n_gpus))
    shape, graphs = model.shape(ranks)
    size = 4_000_000
    slow = trimmed_slowdown("all_gather", size, "Ring", "LL", shape, graphs, model.consts)
    frac = runtime_fraction(size, "Ring", "LL", topo.n_gpus, graphs)
    assert frac < 1 and 1 < slow < 1 / frac
    small = model.plan("all_gather", size, ranks)
    assert small.time > small.model_time

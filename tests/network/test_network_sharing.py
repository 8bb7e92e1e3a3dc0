"""Network in SimPy time: completion instants worked by hand."""

import numpy as np
import pytest
import simpy

from embsim.network import Demand, Network


def run_transfers(capacity, specs):
    """specs: list of (start time, Demand). Returns (end times, network)."""
    env = simpy.Environment()
    net = Network(env, np.array(capacity, dtype=float))
    ends = [None] * len(specs)

    def one(i, start, demand):
        yield env.timeout(start)
        record = yield net.transfer(demand, tag=i)
        assert record.tag == i and record.start == pytest.approx(start)
        ends[i] = env.now
        assert record.end == env.now

    for i, (start, demand) in enumerate(specs):
        env.process(one(i, start, demand))
    env.run()
    return ends, net


def test_alone_takes_max_bytes_over_capacity():
    demand = Demand(links=[0, 1, 2], bytes=[30.0, 10.0, 5.0])
    ends, net = run_transfers([10.0, 2.0, 1.0], [(0.0, demand)])
    assert ends[0] == pytest.approx(max(3.0, 5.0, 5.0), abs=1e-12)
    assert net.bytes_carried.tolist() == pytest.approx([30.0, 10.0, 5.0])
    assert net.busy_time.tolist() == pytest.approx([5.0, 5.0, 5.0])
    assert net.recomputations == 1


def test_two_equal_transfers_on_one_link_each_get_half():
    d = Demand.along((0,), 10.0)
    ends, net = run_transfers([10.0], [(0.0, d), (0.0, d)])
    assert ends == pytest.approx([2.0, 2.0], abs=1e-12)
    assert net.recomputations == 1  # both starts at t=0 coalesce into one pass


def test_disjoint_links_do_not_interact():
    ends, _ = run_transfers(
        [10.0, 1.0], [(0.0, Demand.along((0,), 10.0)), (0.5, Demand.along((1,), 3.0))]
    )
    assert ends == pytest.approx([1.0, 3.5], abs=1e-12)


def test_an_ending_transfer_speeds_up_the_other_at_the_right_instant():
    # A: 10 B alone at 10 B/s from t=0; B joins at 0.5 when A has 5 B left.
    # Sharing 5 B/s each: A ends at 0.5 + 5/5 = 1.5; B then has 5 B left at 10 B/s -> 2.0.
    d = Demand.along((0,), 10.0)
    ends, net = run_transfers([10.0], [(0.0, d), (0.5, d)])
    assert ends[0] == pytest.approx(1.5, abs=1e-9)
    assert ends[1] == pytest.approx(2.0, abs=1e-9)
    assert net.recomputations == 3  # t=0, t=0.5, t=1.5
    assert net.bytes_carried[0] == pytest.approx(20.0)
    assert net.busy_time[0] == pytest.approx(2.0)


def test_textbook_three_levels_then_released_capacity():
    # Unit demands; caps L0=1, L1=2, L2=4. Rates 1/2, 1/2, 3/2, 5/2 (see maxmin tests).
    # f3 ends at 1/2.5 = 0.4; f2 is still held by L1 at 3/2 and has 0.4 left -> 0.4 + 0.4/1.5.
    # f0, f1 share L0 throughout -> 2.0.
    flows = [
        Demand(links=[0, 1], bytes=[1.0, 1.0]),
        Demand.along((0,), 1.0),
        Demand(links=[1, 2], bytes=[1.0, 1.0]),
        Demand.along((2,), 1.0),
    ]
    ends, _ = run_transfers([1.0, 2.0, 4.0], [(0.0, f) for f in flows])
    assert ends == pytest.approx([2.0, 2.0, 0.4 + 0.4 / 1.5, 0.4], abs=1e-9)


def test_second_level_flow_takes_the_rest_of_its_bottleneck():
    # Byte-fair: A: L0 10 B + L1 10 B; B: L1 30 B; C: L0 20 B; caps 10, 10.
    # Both links saturate at 5 B/s per transfer: A ends at 2.0 (10 B at 5 B/s).
    # Then C has L0 alone (10 B left at 10 B/s -> 3.0) and B has L1 alone
    # (20 B left at 10 B/s -> 4.0).
    ends, _ = run_transfers(
        [10.0, 10.0],
        [
            (0.0, Demand(links=[0, 1], bytes=[10.0, 10.0])),
            (0.0, Demand.along((1,), 30.0)),
            (0.0, Demand.along((0,), 20.0)),
        ],
    )
    assert ends == pytest.approx([2.0, 4.0, 3.0], abs=1e-9)


def test_unequal_transfers_share_bytes_fairly_so_the_small_one_ends_first():
    env = simpy.Environment()
    net = Network(env, np.array([10.0]))
    a = net.transfer(Demand.along((0,), 10.0))
    b = net.transfer(Demand.along((0,), 30.0))
    env.run(until=1.0)
    assert net.link_load()[0] == pytest.approx(10.0)
    assert net.bytes_carried[0] == pytest.approx(10.0)
    env.run()
    # 5 B/s each until the 10 B transfer ends at 2.0; then 10 B/s for the other 20 B.
    assert a.value.end == pytest.approx(2.0) and b.value.end == pytest.approx(4.0)


def test_zero_byte_demand_completes_in_the_same_instant():
    env = simpy.Environment()
    net = Network(env, np.array([1.0, 1.0]))
    seen = []

    def proc():
        yield env.timeout(2.0)
        yield net.transfer(Demand.empty())
        seen.append(env.now)
        yield net.transfer(Demand(links=[1], bytes=[0.0]))
        seen.append(env.now)

    env.process(proc())
    env.run()
    assert seen == [2.0, 2.0]
    assert net.recomputations == 0 and net.busy_time.tolist() == [0.0, 0.0]


def test_zero_entries_do_not_make_a_link_busy():
    _, net = run_transfers([1.0, 1.0], [(0.0, Demand(links=[0, 1], bytes=[2.0, 0.0]))])
    assert net.busy_time.tolist() == pytest.approx([2.0, 0.0])


def test_utilisation_and_busy_fraction():
    ends, net = run_transfers([10.0, 10.0], [(0.0, Demand.along((0,), 10.0))])
    assert net.utilisation([0], 2.0) == pytest.approx(0.5)
    assert net.utilisation([0, 1], 1.0) == pytest.approx(0.5)
    assert net.busy_fraction([0, 1], 2.0) == pytest.approx(0.25)


def random_specs(seed, n, n_links):
    rng = np.random.default_rng(seed)
    specs = []
    for _ in range(n):
        links = rng.choice(n_links, size=int(rng.integers(1, 30)), replace=False)
        specs.append(
            (float(rng.uniform(0, 1) / 3.0), Demand(links=links, bytes=rng.uniform(1, 7, links.size) / 3.0))
        )
    return specs, rng.uniform(1.0, 5.0, n_links)


def test_many_concurrent_transfers_conserve_bytes_and_never_beat_idle_time():
    specs, capacity = random_specs(3, 60, 200)
    ends, net = run_transfers(capacity, specs)
    for (start, demand), end in zip(specs, ends):
        assert end is not None
        assert end - start >= demand.bottleneck_time(capacity) * (1 - 1e-9)
    expected = Demand.sum(d for _, d in specs).per_link(capacity.size)
    assert np.allclose(net.bytes_carried, expected, rtol=1e-9)
    # each start or end instant recomputes at most once
    assert net.recomputations <= 2 * len(specs)
    assert net.transfers_completed == len(specs) and net.active == 0


def test_deterministic_across_runs():
    specs, capacity = random_specs(11, 30, 50)
    assert run_transfers(capacity, specs)[0] == run_transfers(capacity, specs)[0]


def test_rejects_links_outside_the_network_or_without_capacity():
    env = simpy.Environment()
    net = Network(env, np.array([1.0, 0.0]))
    with pytest.raises(ValueError, match="outside"):
        net.transfer(Demand.along((2,), 1.0))
    with pytest.raises(ValueError, match="no capacity"):
        net.transfer(Demand.along((1,), 1.0))
    with pytest.raises(ValueError):
        Network(env, np.array([1.0, np.inf]))


def test_capacity_scale_slows_transfers_from_that_moment():
    env = simpy.Environment()
    net = Network(env, np.array([10.0]))
    done = net.transfer(Demand.along((0,), 30.0))

    def halve_at_1():
        yield env.timeout(1.0)
        net.set_capacity_scale(0.5)
    env.process(halve_at_1())
    env.run()
    # 10 B in the first second, then 20 B at 5 B/s
    assert done.value.end == pytest.approx(5.0)
    with pytest.raises(ValueError):
        net.set_capacity_scale(0.0)


def test_a_transfer_alone_gets_the_general_max_min_rate_bit_for_bit():
    from embsim.network.maxmin import weighted_max_min_rates
    rng = np.random.default_rng(7)
    capacity = rng.uniform(1.0, 50.0, 40)
    demand = Demand(links=rng.choice(40, 25, replace=False), bytes=rng.uniform(0.1, 9.0, 25))
    d = demand.normalised()
    peak = d.bytes.max()
    rates, _ = weighted_max_min_rates(np.zeros(d.links.size, dtype=np.int64), np.arange(d.links.size),
                                      d.bytes / peak, capacity[d.links], 1)
    ends, net = run_transfers(capacity, [(0.0, demand)])
    assert ends[0] == 1.0 / float(rates[0] / peak)      # the whole demand at that rate
    assert net.bytes_carried[d.links].tolist() == pytest.approx(d.bytes.tolist(), rel=1e-12)

"""Progressive filling, checked against hand-worked allocations and the max-min criterion."""

import numpy as np
import pytest

from embsim.network import weighted_max_min_rates


def flows_to_entries(flows):
    """flows: list of {link: bytes}. Returns owner, link, weight arrays."""
    owner, link, weight = [], [], []
    for f, demand in enumerate(flows):
        for l, b in demand.items():
            owner.append(f)
            link.append(l)
            weight.append(b)
    return np.array(owner), np.array(link), np.array(weight, dtype=float)


def rates_of(flows, capacity):
    owner, link, weight = flows_to_entries(flows)
    rates, _ = weighted_max_min_rates(owner, link, weight, np.array(capacity, float), len(flows))
    return rates


def test_two_equal_flows_on_one_link_get_half_each():
    assert rates_of([{0: 1.0}, {0: 1.0}], [1.0]).tolist() == [0.5, 0.5]


def test_textbook_example_three_bottleneck_levels():
    # L0 (cap 1): f0 f1; L1 (cap 2): f0 f2; L2 (cap 4): f2 f3.
    # L0 saturates first at 1/2 (f0, f1); L1 then leaves 2 - 1/2 = 3/2 for f2;
    # L2 leaves 4 - 3/2 = 5/2 for f3.
    flows = [{0: 1.0, 1: 1.0}, {0: 1.0}, {1: 1.0, 2: 1.0}, {2: 1.0}]
    assert rates_of(flows, [1.0, 2.0, 4.0]) == pytest.approx([0.5, 0.5, 1.5, 2.5], abs=1e-15)


def test_weights_split_a_bottleneck_in_proportion_to_demand():
    # 10 B and 30 B on a 10 B/s link: one common fraction rate 10/40 = 1/4 per second.
    assert rates_of([{0: 10.0}, {0: 30.0}], [10.0]) == pytest.approx([0.25, 0.25])


def test_weighted_textbook_second_level():
    # f1 is capped by L1 (20 B at 10 B/s -> 1/2); f0 takes L0's rest: (10 - 5*1/2)/10.
    assert rates_of([{0: 10.0}, {0: 5.0, 1: 20.0}], [10.0, 10.0]) == pytest.approx([0.75, 0.5])


def test_disjoint_flows_each_get_their_own_bottleneck():
    assert rates_of([{0: 2.0, 1: 1.0}, {2: 3.0}], [1.0, 1.0, 6.0]) == pytest.approx([0.5, 2.0])


def test_random_allocations_are_feasible_and_max_min_fair():
    rng = np.random.default_rng(7)
    n_links, n_flows = 40, 25
    capacity = rng.uniform(1.0, 10.0, n_links)
    flows = []
    for _ in range(n_flows):
        links = rng.choice(n_links, size=rng.integers(1, 8), replace=False)
        flows.append({int(l): float(rng.uniform(0.1, 5.0)) for l in links})
    rates = rates_of(flows, capacity)
    owner, link, weight = flows_to_entries(flows)
    load = np.bincount(link, weights=weight * rates[owner], minlength=n_links)
    assert np.all(load <= capacity * (1 + 1e-9))
    saturated = load >= capacity * (1 - 1e-9)
    # Max-min criterion: every flow crosses a saturated link on which no flow is faster.
    for f, demand in enumerate(flows):
        assert any(
            saturated[l]
            and all(rates[g] <= rates[f] * (1 + 1e-9) for g, d in enumerate(flows) if l in d)
            for l in demand
        ), f"flow {f} has no bottleneck"


def test_rounds_bounded_by_distinct_levels():
    owner, link, weight = flows_to_entries([{0: 1.0}, {0: 1.0}, {1: 1.0}])
    rates, rounds = weighted_max_min_rates(owner, link, weight, np.array([1.0, 1.0]), 3)
    assert rates.tolist() == [0.5, 0.5, 1.0] and rounds == 2

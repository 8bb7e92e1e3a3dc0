import numpy as np
import pytest

from embsim.network import Demand


def test_normalised_merges_duplicates_and_drops_zeros():
    d = Demand(links=[5, 2, 5, 7], bytes=[1.0, 2.0, 3.0, 0.0]).normalised()
    assert d.links.tolist() == [2, 5]
    assert d.bytes.tolist() == [2.0, 4.0]
    assert d.links.dtype == np.int64 and d.bytes.dtype == np.float64


def test_arrays_are_read_only_copies():
    links = np.array([0, 1])
    d = Demand(links=links, bytes=[1.0, 1.0])
    links[0] = 9
    assert d.links[0] == 0
    with pytest.raises(ValueError):
        d.bytes[0] = 3.0


def test_scaled_merge_total_and_equality():
    a = Demand(links=[0, 1], bytes=[1.0, 2.0])
    b = Demand(links=[1, 2], bytes=[4.0, 8.0])
    assert a.scaled(2.5).bytes.tolist() == [2.5, 5.0]
    s = a + b
    assert s.links.tolist() == [0, 1, 2] and s.bytes.tolist() == [1.0, 6.0, 8.0]
    assert s == a.merge(b) == Demand.sum([b, a])
    assert s.total == 15.0
    assert a != b
    assert Demand.empty().is_empty and Demand.sum([]).total == 0.0


def test_bottleneck_time_is_max_bytes_over_capacity():
    cap = np.array([10.0, 4.0, 1.0])
    d = Demand(links=[0, 1, 1], bytes=[50.0, 4.0, 4.0])
    assert d.bottleneck_time(cap) == pytest.approx(5.0)  # link 0: 50/10 beats 8/4
    assert Demand.empty().bottleneck_time(cap) == 0.0
    with pytest.raises(ValueError, match="no capacity"):
        Demand(links=[0], bytes=[1.0]).bottleneck_time(np.zeros(1))


def test_along_route_and_per_link():
    d = Demand.along((3, 1), 7.0)
    assert d.per_link(4).tolist() == [0.0, 7.0, 0.0, 7.0]


@pytest.mark.parametrize(
    "links, nbytes",
    [([0, 1], [1.0]), ([-1], [1.0]), ([0], [-1.0]), ([0], [np.nan])],
)
def test_rejects_bad_demands(links, nbytes):
    with pytest.raises(ValueError):
        Demand(links=links, bytes=nbytes)


def test_scaled_rejects_negative():
    with pytest.raises(ValueError):
        Demand.along((0,), 1.0).scaled(-1.0)


def test_normalised_is_computed_once_and_is_its_own_normal_form():
    d = Demand(links=[3, 1, 3], bytes=[1.0, 2.0, 4.0])
    n = d.normalised()
    assert d.normalised() is n and n.normalised() is n
    assert n.links.tolist() == [1, 3] and n.bytes.tolist() == [2.0, 5.0]


def test_a_scaled_normal_demand_shares_its_link_ids_and_stays_normal():
    n = Demand(links=[3, 1, 3], bytes=[1.0, 2.0, 4.0]).normalised()
    s = n.scaled(2.0)
    assert s.links is n.links and s.normalised() is s and s.bytes.tolist() == [4.0, 10.0]
    assert n.scaled(0.0).normalised().links.size == 0      # zero bytes: dropped, as ever
    raw = np.array([0, 1])
    d = Demand(links=raw, bytes=[1.0, 1.0])
    raw[0] = 5                                             # the caller's array is copied
    assert d.links.tolist() == [0, 1]


def test_a_demand_already_in_normal_form_is_its_own_normal_form():
    # sorted distinct links, every entry > 0: no second copy of its arrays, same values
    d = Demand(links=[1, 4, 9], bytes=[2.0, 0.5, 3.0])
    assert d.normalised() is d
    # anything else is rebuilt as before: repeats merged, unsorted sorted, zeros dropped
    for links, nbytes, want in (([1, 1, 9], [2.0, 0.5, 3.0], ([1, 9], [2.5, 3.0])),
                                ([4, 1], [1.0, 2.0], ([1, 4], [2.0, 1.0])),
                                ([1, 4], [1.0, 0.0], ([1], [1.0]))):
        n = Demand(links=links, bytes=nbytes).normalised()
        assert (n.links.tolist(), n.bytes.tolist()) == want

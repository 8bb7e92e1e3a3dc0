"""All-to-all without N^2 pairs: the structural demand (AlltoallPattern) equals the
pairwise route table (AlltoallRoutes) on topologies small enough to route every pair,
bit for bit for uniform traffic and, for one-sided skew, on every link but the spine and
core ones; Traffic's algebra equals the dense matrix's; and the p2p load read off the
factors equals what alltoallv_time reads off the dense matrix, bit for bit."""

import numpy as np
import pytest

from embsim.collectives import CollectiveModel
from embsim.collectives.alltoall_demand import AlltoallPattern, seqsum
from embsim.collectives.demand import AlltoallRoutes, _ring_edges, _ring_pairs, ordered_ranks, uniform_alltoall_matrix
from embsim.collectives.pairwise import row_sum
from embsim.collectives.traffic import Traffic, traffic_p2p_load
from embsim.topology import load_topology, parse_node_type
from embsim.topology.topology import Topology

from embsim.topology.clusterspec import find_preset

# a plain (not rail-optimised) fat tree, several leaf groups, three spines
FAT_TREE_SPINES = (find_preset("dgx-a100").read_text().replace("kind: rail-fat-tree", "kind: fat-tree")
                   .replace("nodes_per_leaf: 20", "nodes_per_leaf: 2\n  spines: 3"))

SPECS = ["dgx-h100:2x8", "dgx-h100:40x8", "dgx-a100:45x4", "dgx-h100:270x2", "pcie-rtx3090:5x8",
         "pcie-rtx3090:3x3", "dgx-h100:1x8"]


def topologies():
    for spec in SPECS:
        yield spec, load_topology(spec)
    node = parse_node_type(FAT_TREE_SPINES)
    yield "fat-tree 3 spines", Topology(node, 7, node.gpu.count)


def traffics(n, rng):
    shares = rng.random(n) ** 4
    shares /= shares.sum()
    return {"even": Traffic.even(n, 123456.789), "even.T": Traffic.even(n, 98765.4321).T,
            "senders": Traffic.from_senders(shares * 3.3e6), "receivers": Traffic.from_senders(shares * 3.3e6).T,
            "outer": Traffic(rng.random(n), rng.random(n) * 1e4)}


@pytest.mark.parametrize("spec,topo", list(topologies()), ids=lambda x: x if isinstance(x, str) else "")
def test_structural_demand_equals_pairwise(spec, topo):
    ranks = tuple(range(topo.n_gpus))
    pairwise, pattern = AlltoallRoutes(topo, ranks), AlltoallPattern(topo, ranks)
    n = topo.n_gpus
    a, b = pairwise.demand(uniform_alltoall_matrix(n, 1.0)), pattern.uniform(1.0 / n)
    assert np.array_equal(a.links, b.links) and np.array_equal(a.bytes, b.bytes)     # bit for bit
    for name, tr in traffics(n, np.random.default_rng(n)).items():
        a, b = pairwise.demand(tr.dense()), pattern.demand(tr)
        assert np.array_equal(a.links, b.links), name
        if tr.kind == "uniform":
            assert np.array_equal(a.bytes, b.bytes), name
        elif tr.kind in ("senders", "receivers"):
            # bit for bit except on spine and core links
            fabric = topo.link_kinds[a.links] == "net"
            assert np.array_equal(a.bytes[~fabric], b.bytes[~fabric]), name
            np.testing.assert_allclose(b.bytes[fabric], a.bytes[fabric], rtol=1e-12, err_msg=name)
        else:
            # both forms round; where a PXN forward cancels against the local bytes the
            # error is relative to the larger of the two, so compare against the largest link
            np.testing.assert_allclose(b.bytes, a.bytes, rtol=1e-12, atol=1e-13 * a.bytes.max(), err_msg=name)


def test_a_communicator_of_some_nodes():
    t = load_topology("dgx-h100:70x8")
    ranks = tuple(r for n in (0, 3, 33, 34, 69) for r in range(n * 8, n * 8 + 8))
    tr = Traffic.even(len(ranks), 4096.0)
    a = AlltoallRoutes(t, ranks).demand(tr.dense())
    b = AlltoallPattern(t, ranks).demand(tr)
    assert np.array_equal(a.links, b.links) and np.array_equal(a.bytes, b.bytes)


def test_irregular_communicator_falls_back_to_pairwise():
    t = load_topology("dgx-h100:2x8")
    ranks = (0, 1, 10, 11)          # different local GPUs on the two nodes
    plan = CollectiveModel(t).plan("alltoall", 1 << 20, ranks)
    want = AlltoallRoutes(t, ranks).demand(uniform_alltoall_matrix(4, 1.0))
    assert np.array_equal(plan.demand.links, want.links) and not plan.demand.is_empty


@pytest.mark.parametrize("spec", ["dgx-h100:6x8", "dgx-a100:9x4", "pcie-rtx3090:3x8", "dgx-h100:40x8",
                                  "dgx-a100:37x3"])
def test_p2p_load_from_factors_equals_dense(spec):
    t = load_topology(spec)
    n, g = t.n_gpus, t.gpus_per_node
    node_of = np.arange(n) // g
    for name, tr in traffics(n, np.random.default_rng(1)).items():
        m = tr.dense()
        same = node_of[:, None] == node_of[None, :]
        off = m.copy()
        np.fill_diagonal(off, 0.0)
        lo, li = np.where(same, off, 0).sum(1), np.where(same, off, 0).sum(0)
        ro, ri = np.where(same, 0, m).sum(1), np.where(same, 0, m).sum(0)
        want = (max((lo + ro).max(), (li + ri).max()), max(ro.max(), ri.max()), off[off > 0].max(),
                int((off > 0).sum(1).max()))
        got = traffic_p2p_load(tr, node_of, g)
        if tr.kind != "outer":
            assert got == tuple(float(x) for x in want[:3]) + (want[3],), name       # bit for bit
        np.testing.assert_allclose(got[:3], want[:3], rtol=1e-13, err_msg=name)
        assert got[3] == want[3]


def test_row_sums_reproduce_numpy_pairwise_summation():
    rng = np.random.default_rng(5)
    for _ in range(500):
        n = int(rng.integers(1, 6000))
        cuts = np.sort(rng.choice(n + 1, size=2 * int(rng.integers(0, 4)), replace=True))
        runs = [(cuts[i], cuts[i + 1], float(rng.random() * 10.0 ** rng.integers(-3, 7)))
                for i in range(0, cuts.size, 2)]
        row = np.zeros(n)
        for lo, hi, v in runs:
            row[lo:hi] = v
        assert row_sum(n, runs) == float(row.sum())


def test_alltoallv_plan_from_factors_matches_dense_plan():
    t = load_topology("dgx-h100:4x8")
    model = CollectiveModel(t)
    for tr in traffics(t.n_gpus, np.random.default_rng(2)).values():
        a = model.plan_alltoallv(tr.dense(), range(t.n_gpus))
        b = model.plan_alltoallv(tr, range(t.n_gpus))
        assert b.time == pytest.approx(a.time, rel=1e-12) and b.proto == a.proto
        np.testing.assert_allclose(b.demand.bytes, a.demand.bytes, rtol=1e-12)


def test_traffic_algebra_is_the_dense_matrix_algebra_exactly():
    rng = np.random.default_rng(3)
    n = 24
    shares = rng.random(n)
    dense_s = np.outer(shares, np.ones(n)) * 777.0        # how strategies built them before
    tr_s = Traffic.from_senders(shares * 777.0)
    dense_e, tr_e = np.full((n, n), 5555.5 / n), Traffic.even(n, 5555.5)
    for dense, tr in ((dense_s, tr_s), (dense_e, tr_e), (dense_s.T.copy(), tr_s.T), (dense_e.T.copy(), tr_e.T)):
        assert np.array_equal(tr.dense(), dense)
        assert np.array_equal((tr * 0.37).dense(), dense * 0.37)
        assert np.array_equal((tr / 7).dense(), dense / 7)
    order = rng.permutation(n)
    assert np.array_equal(tr_s.permuted(order).dense(), dense_s[np.ix_(order, order)])
    assert tr_e.kind == "uniform" and tr_s.kind == "senders" and tr_s.T.kind == "receivers"
    with pytest.raises(ValueError):
        Traffic(np.ones(3), -np.ones(3))


def test_seqsum_adds_one_by_one():
    w = 0.1
    acc, want = 0.0, []
    for _ in range(50):
        acc += w
        want.append(acc)
    assert seqsum(w, np.arange(1, 51)).tolist() == want
    assert seqsum(w, np.array([0, 0])).tolist() == [0.0, 0.0]


def test_ring_pairs_equal_ring_edges():
    t = load_topology("dgx-h100:5x8")
    groups = ordered_ranks(t, range(t.n_gpus))
    for rotations in (1, 3, 8):
        want = [p for ring in _ring_edges(groups, rotations) for p in ring]
        assert _ring_pairs(groups, rotations).tolist() == [list(p) for p in want]

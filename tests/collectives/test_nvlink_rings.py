"""Ring channels on a direct NVLink mesh come from its pairs' link counts."""

from pathlib import Path

import pytest

from embsim.collectives import CollectiveModel
from embsim.collectives.nvlink_rings import ring_units
from embsim.topology import load_topology

ROOT = Path(__file__).resolve().parents[2]
DGX1 = load_topology("dgx1-v100").node.fabric.nvlink_pairs


def test_dgx1_cube_mesh_carries_six_rings_on_its_six_links():
    assert ring_units(tuple(range(8)), DGX1) == 6


def test_a_quad_of_the_cube_mesh_carries_its_four_links():
    # GPUs 0-3: each has 4 of its 6 links inside the quad
    assert ring_units((0, 1, 2, 3), DGX1) == 4


def test_a_bridged_pair_carries_one_ring_per_link():
    assert ring_units((0, 1), ((0, 1, 3),)) == 3


def test_a_ring_of_single_links_carries_one_ring_each_way():
    hops = ((0, 1, 1), (1, 2, 1), (2, 3, 1), (3, 7, 1), (7, 6, 1), (6, 5, 1), (5, 4, 1), (4, 0, 1))
    assert ring_units(tuple(range(8)), hops) == 2


def test_no_ring_closes_through_a_chain():
    assert ring_units((0, 1, 2), ((0, 1, 2), (1, 2, 2))) == 0


def _cut(tmp_path, pairs: str) -> str:
    text = (ROOT / "topologies" / "dgx1-v100.yaml").read_text()
    start = text.index("  nvlink_pairs:")
    end = text.index("  pcie_gen:")
    path = tmp_path / "dgx1-cut.yaml"
    path.write_text(text[:start] + f"  nvlink_pairs: {pairs}\n" + text[end:])
    return str(path)


@pytest.mark.parametrize("op", ["all_reduce", "all_gather"])
def test_fewer_pair_links_slow_the_ring(tmp_path, op):
    # The file's pair counts reach the time: they used to be read for connectivity only,
    # so a DGX-1 cut to one ring of single links ran as fast as the cube-mesh.
    ring = _cut(tmp_path, "[[0, 1, 1], [1, 2, 1], [2, 3, 1], [3, 7, 1], [7, 6, 1], [6, 5, 1], "
                          "[5, 4, 1], [4, 0, 1]]")
    full = CollectiveModel(load_topology("dgx1-v100")).plan(op, 256 << 20, range(8))
    cut = CollectiveModel(load_topology(ring)).plan(op, 256 << 20, range(8))
    assert (cut.algo, cut.proto) == (full.algo, full.proto) == ("Ring", "Simple")
    assert cut.time > 2.5 * full.time

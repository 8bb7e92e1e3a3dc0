"""AWS's region tuner (aws-ofi-nccl v1.16.3 src/tuner/nccl_ofi_regions.cpp): the geometry,
the p5 tables' picks, and how the model lets it override NCCL's choice."""

import pytest

from embsim.collectives import CollectiveModel
from embsim.collectives import ofi_tuner as ot
from embsim.topology import load_topology

SQUARE = ((0.0, 0.0), (10.0, 0.0), (10.0, 10.0), (0.0, 10.0))
ANY = lambda a, p: True  # noqa: E731


def test_inside_edge_outside():
    assert ot.inside((5, 5), SQUARE) == 1
    assert ot.inside((10, 5), SQUARE) == 0 and ot.inside((0, 0), SQUARE) == 0   # edge, vertex
    assert ot.inside((11, 5), SQUARE) == -1 and ot.inside((5, -1e-3), SQUARE) == -1
    # a zero-area region (two vertices the same) still holds the points on its segment
    seg = ((1.0, 4.0), (9.0, 4.0), (1.0, 4.0))
    assert ot.inside((5, 4), seg) == 0 and ot.inside((5, 5), seg) == -1


def test_extend_region():
    z = (ot.MAX_SIZE, ot.MAX_RANKS)
    assert ot.extend((3, 1), (3, 7), z) == (3, ot.MAX_RANKS)           # vertical
    assert ot.extend((3, 1), (5, 1), z) == (ot.MAX_SIZE, 1)            # horizontal
    x, y = ot.extend((0, 0), (1, 1), z)                                # y = x: hits MAX_RANKS first
    assert y == ot.MAX_RANKS and x == pytest.approx(ot.MAX_RANKS)


@pytest.mark.parametrize("nodes, size, want", [
    # vertices of the p5 8-GPU table: on an edge counts as inside
    (16, 301989888, ("Tree", "LL128")),
    (32, 2147483648, ("Ring", "LL128")),
    # inside
    (4, 64 << 20, ("Ring", "LL128")), (4, 4 << 30, ("Ring", "Simple")),
    (16, 4 << 30, ("NVLSTree", "Simple")), (32, 1 << 30, ("NVLSTree", "Simple")),
    (128, 256 << 20, ("Tree", "LL128")), (128, 1 << 30, ("NVLSTree", "Simple")),
])
def test_p5_allreduce_regions(nodes, size, want):
    assert ot.pick("aws-ofi-nccl-p5", "all_reduce", size, 8 * nodes, nodes, ANY) == want


def test_skipped_cases():
    t = "aws-ofi-nccl-p5"
    assert ot.pick(t, "all_reduce", 1 << 30, 16, 2, ANY) is None          # two nodes: NCCL's
    assert ot.pick(t, "all_gather", 1 << 30, 64, 8, ANY) is None          # no 8-GPU AllGather table
    assert ot.pick(t, "all_reduce", 1 << 30, 24, 4, ANY) is None          # 6 per node: no table
    assert ot.pick(t, "all_gather", 1 << 30, 8, 8, ANY) == ("Ring", "Simple")   # 1 per node
    # NVLSTree unavailable: the next region that holds the point, else NCCL's choice
    no_nvls = lambda a, p: a != "NVLSTree"  # noqa: E731
    assert ot.pick(t, "all_reduce", 1 << 30, 256, 32, no_nvls) is None
    assert ot.pick(t, "all_reduce", 4 << 30, 128, 16, no_nvls) is None
    assert not ot.loaded(t, "2.20") and ot.loaded(t, "2.21") and not ot.loaded("", "2.27")
    with pytest.raises(ValueError):
        ot.regions("nope", "all_reduce", 64, 8)


def test_model_follows_the_tuner_on_p5_only_from_2_21():
    ranks = range(32)
    topo = load_topology("aws-p5:4x8")
    plan = CollectiveModel(topo, nccl_version="2.27").plan("all_reduce", 1 << 30, ranks)
    assert (plan.algo, plan.proto) == ("Ring", "LL128")
    # NCCL's own choice: without the tuner (2.20) and on the same nodes without it (dgx-h100)
    own = CollectiveModel(topo, nccl_version="2.20").plan("all_reduce", 1 << 30, ranks)
    assert (own.algo, own.proto) != ("Ring", "LL128")
    # a protocol filter makes the pair unavailable: the tuner's region is skipped
    filt = CollectiveModel(topo, nccl_version="2.27", proto="^LL128").plan("all_reduce", 1 << 30, ranks)
    assert filt.proto != "LL128"
    # two nodes: NCCL decides
    two = load_topology("aws-p5:2x8")
    assert (CollectiveModel(two, nccl_version="2.27").plan("all_reduce", 1 << 30, range(16)).algo
            == CollectiveModel(two, nccl_version="2.20").plan("all_reduce", 1 << 30, range(16)).algo)


def test_outputs_say_the_tuner_picks(capsys):
    from embsim.cli import main
    assert main(["nccl-tests", "--topology", "aws-p5:4x8", "-b", "1G", "-e", "1G", "--nccl-version", "2.27.7"]) == 0
    out = capsys.readouterr().out
    assert "aws-ofi-nccl region tuner" in out and "Ring  LL128" in out
    assert CollectiveModel(load_topology("aws-p5:2x8")).tuner_note == ""          # 2 nodes: NCCL's
    assert CollectiveModel(load_topology("aws-p5:4x8"), nccl_version="2.20").tuner_note == ""
    assert CollectiveModel(load_topology("dgx-h100:4x8")).tuner_note == ""        # no plugin tuner


def test_aws_unit_test_cases():
    """aws-ofi-nccl's own unit test of the geometry (tests/unit/region_based_tuner.cpp @v1.16.3;
    its loops read the first 20 points of each list)."""
    M, G = 1024.0 * 1024, 1024.0 * 1024 * 1024
    assert ot.extend((2, 8), (4, 8)) == (ot.MAX_SIZE, 8)
    assert ot.extend((8, 2), (8, 4)) == (8, ot.MAX_RANKS)
    slope = (72.0 - 64.0) / (8290304.0 - 8.0)
    assert ot.extend((8, 64), (8290304, 72)) == (ot.MAX_SIZE, 72.0 + slope * (ot.MAX_SIZE - 8290304.0))
    assert ot.extend((8, 64), (16, 1024)) == ((ot.MAX_RANKS - 1024.0) / ((1024.0 - 64.0) / 8.0) + 16, ot.MAX_RANKS)
    e = ot.extend((48 * M, 16), (288 * M, 128))
    region = (e, (288 * M, 128), (48 * M, 16), (4 * M, 2), (ot.MAX_SIZE, 2))
    assert all(ot.inside(v, region) == 0 for v in region)
    for i, a in enumerate(region):
        b = region[(i + 1) % len(region)]
        if b[0] == a[0]:
            continue
        slope = (b[1] - a[1]) / (b[0] - a[0])
        c = b[1] - slope * a[0]          # sic: the C test's intercept, through (a.x, b.y)
        x = a[0]
        while x < b[0]:
            assert ot.inside((x, slope * x + c), region) == 0, (x, i)
            x *= 2
    inside = [(16 * M, 4), (128 * M, 4), (1 * G, 4), (4 * G, 4), (16 * G, 4), (32 * G, 4), (64 * M, 16),
              (1 * G, 16), (4 * G, 16), (16 * G, 16), (32 * G, 16), (64 * G, 16), (512 * M, 128),
              (4 * G, 128), (16 * G, 128), (32 * G, 128), (64 * G, 128), (64 * G, 256),
              (ot.MAX_SIZE - 1.0, 128), (e[0] - 1.0, e[1] - 1.0)]
    assert all(ot.inside(p, region) == 1 for p in inside)
    outside = [(8 * M, 4), (8 * M, 32), (8 * M, 128), (8 * M, 512), (8 * M, ot.MAX_RANKS), (16 * M, 8),
               (16 * M, 32), (16 * M, 128), (16 * M, 512), (16 * M, ot.MAX_RANKS), (32 * M, 16),
               (32 * M, 32), (32 * M, 64), (32 * M, 128), (32 * M, 256), (64 * M, 32), (64 * M, 64),
               (64 * M, 256), (64 * M, 1024), (256 * M, 256),
               (2 * M, 2), (64 * M, 64), (200 * M, 128), (1024 * M, 1024), (1024 * M, 2048)]
    assert all(ot.inside(p, region) == -1 for p in outside)

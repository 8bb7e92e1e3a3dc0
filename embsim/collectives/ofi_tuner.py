"""AWS's NCCL tuner plugin (aws-ofi-nccl's region tuner), as pure functions.

On AWS the EFA net plugin (aws-ofi-nccl) also carries a tuner: NCCL 2.21+ loads it from the
net plugin's library when NCCL_TUNER_PLUGIN is not set (src/Makefile.am: "By bundling the
tuner in the net plugin, we cause the tuner to be used by default"; NVIDIA/nccl
src/plugin/tuner.cc ncclTunerPluginLoad), and 2.19-2.20 load it when NCCL_TUNER_PLUGIN
names it. On a known instance type it overrides NCCL's algorithm/protocol choice with
regions in the (message bytes, ranks) plane that AWS measured: a point inside (or on the
edge of) a region gets that region's (algo, proto) -- its cost is set to 0 in NCCL's
table (region_get_coll_info_internal_v3) -- unless NCCL marks the pair unavailable
(NCCL_ALGO_PROTO_IGNORE: disabled, or filtered by NCCL_ALGO/NCCL_PROTO), in which case the
next region is tried; no region: NCCL's own choice. On two nodes or fewer the regions are
skipped ("the regions are not well defined"). Regions are tried in table order.

Source: github.com/aws/aws-ofi-nccl src/tuner/nccl_ofi_regions.cpp and
include/tuner/nccl_ofi_tuner_region.h, v1.16.3 (b9e4cc4, 2025-08-12), the release of the
held-out AWS p5 runs. The p5/p5e tables are the same from v1.14.0 to v1.18.0 (git diff of
region_init_internal_p5_p5e; the two-node skip is in every release from v1.14). v1.19.0
tests points in log2 coordinates (transform_log2) and closes the 1-rank-per-node
Tree/LL128 region with one more vertex: not modelled. The p5en and p6 tables are not
modelled either: they changed between v1.16 and v1.19 and no run here says which a P6
user has (the aws-p6-b200 preset keeps NCCL's own choice).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import lru_cache
from typing import Callable

from embsim.topology.spec import NCCL_TUNERS as TUNERS   # the tables modelled below

# nccl_ofi_tuner_region.h
MAX_RANKS = 1024.0 * 1024
MAX_SIZE = 100.0 * 1024 * 1024 * 1024
_EPS = 1e-10
# NCCL ops the tuner sees (ncclFunc_t): the tables hold AllReduce / AllGather / ReduceScatter
_FUNCS = {"all_reduce": "AllReduce", "all_gather": "AllGather", "reduce_scatter": "ReduceScatter"}

Point = tuple[float, float]


def _sub(a: Point, b: Point) -> Point:
    return (a[0] - b[0], a[1] - b[1])


def _cross(a: Point, b: Point) -> float:
    return a[0] * b[1] - a[1] * b[0]


def _intersect(x0: Point, x1: Point, y0: Point, y1: Point) -> tuple[int, Point | None]:
    """intersect(): 1 if segment x0->x1 crosses y0->y1, -1 if not, 0 when the crossing is
    within eps of y0 or y1 or the segments are parallel; and the crossing point (None when
    parallel: the C code leaves it unset). The C code divides into a `long double` and
    forms the crossing point from it, so a point on a long edge lands on it exactly; the
    quotient is taken exactly here (Fraction) for the same result on every platform."""
    dx, dy = _sub(x1, x0), _sub(y1, y0)
    d = _cross(dy, dx)
    if abs(d) < _EPS:
        return 0, None
    a = Fraction(_cross(x0, dx) - _cross(y0, dx)) / Fraction(d)
    sect = (float(Fraction(y0[0]) + a * Fraction(dy[0])), float(Fraction(y0[1]) + a * Fraction(dy[1])))
    if a < -_EPS or a > 1 + _EPS:
        return -1, sect
    if a < _EPS or a > 1 - _EPS:
        return 0, sect
    a = Fraction(_cross(x0, dy) - _cross(y0, dy)) / Fraction(d)
    if a < 0 or a > 1:
        return -1, sect
    return 1, sect


def _distance(x: Point, y0: Point, y1: Point) -> float:
    """Distance from x to its foot on segment y0->y1; inf off the segment (or for a
    zero-length edge, where the C code reads an unset point: taken as not on the edge)."""
    dy = _sub(y1, y0)
    r, s = _intersect(x, (x[0] + dy[1], x[1] - dy[0]), y0, y1)
    if r == -1 or s is None:
        return math.inf
    s = _sub(s, x)
    return math.hypot(s[0], s[1])


def inside(point: Point, vertices: tuple[Point, ...]) -> int:
    """is_inside_region(): 1 inside, 0 on an edge, -1 outside (ray casting towards
    (2 MAX_SIZE, 2 MAX_RANKS), crossings within eps of a vertex not counted)."""
    n = len(vertices)
    xs = [v[0] for v in vertices]
    ys = [v[1] for v in vertices]
    if not (min(xs) - _EPS <= point[0] <= max(xs) + _EPS and min(ys) - _EPS <= point[1] <= max(ys) + _EPS):
        return -1       # beyond eps of the bounding box: on no edge either (a shortcut, same answer)
    for i in range(n):
        if _distance(point, vertices[i], vertices[(i + 1) % n]) < _EPS:
            return 0
    if not (min(xs) <= point[0] <= max(xs) and min(ys) <= point[1] <= max(ys)):
        return -1
    far = (2.0 * MAX_SIZE, 2.0 * MAX_RANKS)
    crosses = sum(1 for i in range(n)
                  if _intersect(point, far, vertices[i], vertices[(i + 1) % n])[0] == 1)
    return 1 if crosses & 1 else -1


def extend(a: Point, b: Point, z: Point = (MAX_SIZE, MAX_RANKS)) -> Point:
    """extend_region(): the point on line a-b that reaches z's x or z's y first."""
    if a[0] == b[0]:
        return (a[0], z[1])
    if a[1] == b[1]:
        return (z[0], a[1])
    m = (a[1] - b[1]) / (a[0] - b[0])
    c = b[1] - m * b[0]
    y = m * z[0] + c
    return (z[0], y) if y < z[1] else ((z[1] - c) / m, z[1])


Region = tuple[str, str, tuple[Point, ...]]


def _p5_8ppn() -> dict[str, tuple[Region, ...]]:
    # region_init_internal_p5_p5e, nRanks == 8 * nNodes
    e_ll128 = extend((402653184, 2048), (402653184, 4096))
    e_nvls1 = extend((8053063680, 160), (9663676416, 192))
    e_nvls2 = extend((402653184, 2048), (402653184, 4096))
    e_ring = extend((8053063680, 160), (9663676416, 192))
    return {"AllReduce": (
        ("Tree", "LL128", ((0, 16), (31457280, 16), (37748736, 32), (117440512, 64),
                           (301989888, 128), (301989888, 256), (335544320, 512),
                           (536870912, 1024), (402653184, 2048), (402653184, 4096), e_ll128,
                           (0, e_ll128[1]))),
        ("NVLSTree", "Simple", ((31457281, 16), (MAX_SIZE, 16), (31457281, 16))),
        ("Ring", "LL128", ((31457280, 17), (1073741824, 17), (2147483648, 64),
                           (2147483648, 128), (1342177280, 160), (2147483648, 256),
                           (1074790400, 256), (444596224, 160), (301989888, 128),
                           (117440512, 64), (37748736, 32))),
        ("NVLSTree", "Simple", ((2147483648, 128), (6442450944, 128), (8053063680, 160),
                                (9663676416, 192), e_nvls1, e_nvls2, (402653184, 4096),
                                (402653184, 2048), (536870912, 1024), (335544320, 512),
                                (301989888, 256), (310378496, 160), (444596224, 160),
                                (1074790400, 256), (2684354560, 256), (2147483648, 224),
                                (1342177280, 160))),
        ("Ring", "Simple", ((1073741824, 17), (e_ring[0], 17), e_ring, (9663676416, 192),
                            (8053063680, 160), (2684354560, 64), (1610612736, 32))),
    )}


def _p5_2ppn() -> dict[str, tuple[Region, ...]]:
    # region_init_internal_p5_p5e, nRanks == 2 * nNodes
    e_ll128 = extend((88160256, 128), (178163712, 256))
    e_simple1 = extend((787480576, 128), (1073741824, 256))
    e_simple2 = extend((257114112, 128), (269484032, 256))
    e_nvls = extend((787480576, 128), (1073741824, 256))
    return {"AllReduce": (
        ("Tree", "LL128", ((0, 4), (1314816, 4), (1051648, 8), (1051648, 12), (2367488, 16),
                           (5525504, 32), (9473024, 64), (88160256, 128), (178163712, 256),
                           e_ll128, (0, e_ll128[1]))),
        ("Ring", "LL128", ((1314816, 4), (19736576, 4), (41842688, 8), (296747008, 64),
                           (257114112, 128), (269484032, 256), (178163712, 256),
                           (88160256, 128), (9473024, 64), (5525504, 32), (2367488, 16),
                           (1051648, 12), (1051648, 8), (1314816, 4))),
        ("NVLSTree", "Simple", ((19736576, 4), (81844224, 4), (275775488, 8), (275775488, 48),
                                (296747008, 64), (41842688, 8))),
        ("Tree", "LL128", ((81844224, 4), (269484032, 4), (81844224, 4))),
        ("Tree", "Simple", ((269484032, 4), (MAX_SIZE, 4), (269484032, 4))),
        ("Ring", "Simple", ((81844224, 5), (MAX_SIZE, 5), (MAX_SIZE, 32), (1073741824, 40),
                            (1073741824, 128), (787480576, 128), (296747008, 64),
                            (275775488, 48), (275775488, 8), (81844224, 5))),
        ("Tree", "Simple", ((296747008, 64), (787480576, 128), (1073741824, 256), e_simple1,
                            e_simple2, (269484032, 256), (257114112, 128))),
        ("NVLSTree", "Simple", (e_nvls, (1073741824, 256), (787480576, 128), (1073741824, 128),
                                (1073741824, 40), (MAX_SIZE, 32))),
    )}


def _p5_1ppn() -> dict[str, tuple[Region, ...]]:
    # region_init_internal_p5_p5e, nRanks == nNodes
    e_tree = extend((9999360, 64), (119477248, 128))
    e_ring = extend((4736000, 2), (269484032, 128))
    e_ag = extend((4194304, 2), (8589934592, 2048))
    e_rs = extend((8388608, 2), (4294967296, 1024))
    return {
        "AllReduce": (
            ("Tree", "LL128", ((0, 16), (2367488, 16), (9999360, 64), (119477248, 128), e_tree)),
            ("Ring", "LL128", ((0, 2), (4736000, 2), (269484032, 128), e_ring, e_tree,
                               (119477248, 128), (9999360, 64), (2367488, 16), (0, 16))),
            ("Ring", "Simple", ((4736000, 2), (MAX_SIZE, 2), e_ring, (269484032, 128))),
        ),
        "AllGather": (("Ring", "Simple", ((4194304, 2), (MAX_SIZE, 2), e_ag, (8589934592, 2048))),),
        "ReduceScatter": (("Ring", "Simple", ((8388608, 2), (MAX_SIZE, 2), e_rs, (4294967296, 1024))),),
    }


# tuner -> ranks per node -> NCCL function -> regions in table order (other shapes: none)
_TABLES = {"aws-ofi-nccl-p5": {8: _p5_8ppn(), 2: _p5_2ppn(), 1: _p5_1ppn()}}


def loaded(tuner: str, nccl_version: str) -> bool:
    """Whether NCCL loads the plugin's tuner by default: from 2.21 it looks in the net
    plugin's library (2.19-2.20 only with NCCL_TUNER_PLUGIN set; 2.18 has no tuner API)."""
    if not tuner:
        return False
    major, minor = (int(p) for p in str(nccl_version).split(".")[:2])
    return (major, minor) >= (2, 21)


def regions(tuner: str, op: str, n_ranks: int, n_nodes: int) -> tuple[Region, ...]:
    """The regions the tuner consults for this communicator (empty: NCCL decides)."""
    if tuner not in _TABLES:
        raise ValueError(f"unknown NCCL tuner {tuner!r} (known: {', '.join(TUNERS)})")
    if n_nodes <= 2 or op not in _FUNCS or n_ranks % n_nodes:
        return ()
    return _TABLES[tuner].get(n_ranks // n_nodes, {}).get(_FUNCS[op], ())


@lru_cache(maxsize=4096)
def _holding(tuner: str, op: str, nbytes: float, n_ranks: int, n_nodes: int) -> tuple[tuple[str, str], ...]:
    """The (algo, proto) of every region that holds the point, in table order."""
    point = (float(nbytes), float(n_ranks))
    return tuple((algo, proto) for algo, proto, vertices in regions(tuner, op, n_ranks, n_nodes)
                 if inside(point, vertices) >= 0)


def pick(tuner: str, op: str, nbytes: float, n_ranks: int, n_nodes: int,
         available: Callable[[str, str], bool]) -> tuple[str, str] | None:
    """The (algo, proto) the tuner forces for NCCL's nBytes on this communicator, or None
    (NCCL's own choice). `available(algo, proto)`: NCCL has a cost for the pair."""
    return next((pair for pair in _holding(tuner, op, float(nbytes), n_ranks, n_nodes)
                 if available(*pair)), None)


def described(tuner: str) -> str:
    return {"aws-ofi-nccl-p5": "aws-ofi-nccl region tuner (p5/p5e, v1.14-v1.18 tables)"}.get(tuner, tuner)

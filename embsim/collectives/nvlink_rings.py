"""How many ring channels a direct NVLink mesh carries: NCCL's ring search on link pairs.

On a mesh or bridge node (DGX-1's hybrid cube-mesh, bridged pairs) NCCL's topology holds
one NVLink edge per GPU pair whose bandwidth is that pair's link count x the per-link rate
(topo.cc ncclTopoConnectNodes adds each link's bandwidth to the pair's edge), and a ring
channel charges its speed on the edge from each GPU to the next (search.cc followPath).
So the rings a mesh carries are directed Hamiltonian cycles through the communicator's
GPUs packed into the pairs' link counts, one link a direction per ring and hop -- not a
GPU's total link count: a DGX-1 whose pairs are cut to a single ring of one-link hops
carries 2 rings (one each way), not the 6 its GPUs' link count would allow.
"""

from __future__ import annotations

import itertools
from functools import lru_cache

# Beyond this many GPUs the cycles are not enumerated (8! orders at 9); the per-GPU bound
# stands in. Mesh nodes have 2-8 GPUs.
MAX_ENUMERATED = 8


def _capacities(gpus: tuple[int, ...], pairs) -> dict[tuple[int, int], int]:
    inside = set(gpus)
    caps: dict[tuple[int, int], int] = {}
    for a, b, links in pairs:
        if a in inside and b in inside:
            caps[(a, b)] = caps.get((a, b), 0) + links
            caps[(b, a)] = caps.get((b, a), 0) + links
    return caps


def _per_gpu_bound(gpus, caps) -> int:
    """No GPU sends on more links than it has: the rings can be no more."""
    return min(sum(v for (a, _), v in caps.items() if a == g) for g in gpus)


@lru_cache(maxsize=256)
def ring_units(gpus: tuple[int, ...], pairs: tuple[tuple[int, int, int], ...]) -> int:
    """Most rings of one link a hop that fit in the pairs' links among `gpus` (sorted local
    indices). A 2-GPU bridge of k links carries k; 0 when no ring closes."""
    if len(gpus) <= 1:
        return 0
    caps = _capacities(gpus, pairs)
    bound = _per_gpu_bound(gpus, caps)
    if bound == 0 or len(gpus) > MAX_ENUMERATED:
        return bound
    first, rest = gpus[0], gpus[1:]
    cycles = []
    for order in itertools.permutations(rest):
        ring = (first,) + order
        hops = tuple((ring[i], ring[(i + 1) % len(ring)]) for i in range(len(ring)))
        if all(caps.get(h, 0) > 0 for h in hops):
            cycles.append(hops)
    best = 0

    def pack(start: int, left: dict, count: int) -> None:
        # branch and bound over multisets of cycles (non-decreasing index: each set once)
        nonlocal best
        best = max(best, count)
        for i in range(start, len(cycles)):
            if best >= bound:
                return
            hops = cycles[i]
            if all(left[h] > 0 for h in hops):
                for h in hops:
                    left[h] -= 1
                pack(i, left, count + 1)
                for h in hops:
                    left[h] += 1

    pack(0, dict(caps), 0)
    return best

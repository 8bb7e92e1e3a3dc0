"""Per-link bytes of a CollNet AllReduce (collnet.py): NVLink inside each node, each head's
NIC path, and the switch tiers where SHARP reduces.

For a message of S bytes:
  * in a node -- Direct: a head GPU's fabric link carries ((heads-1) + (ppn-1)) / heads x S
    each way (scatter to the other heads, broadcast of its reduced part), any other GPU's
    S each way (its whole data to the heads, the whole result back); Chain: each hop of
    the GPU chain carries S up (partial sums) and S down (the result), as a Tree's chain;
  * each NIC in use (one per head, a node's chain heads for Chain) and its path from the
    head GPU carries S / nics up and S / nics down, once, whatever the node count;
  * switch tiers, [APPROXIMATION] of SHARP's aggregation tree: a leaf reduces what its
    nodes send on a rail and sends one reduced share up (split evenly over the spines, as
    the topology's logical spines stand for ideal ECMP) only when the communicator spans
    more than one leaf; the result comes down the same links. On a plain fat tree a
    leaf holds every rail of its nodes and sends each rail's share (they are different
    parts of the message and do not combine): S per leaf. A three-tier fabric's pod spines
    send S per pod to the core, split over the spines, only when the nodes span pods.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from embsim.network import Demand
from embsim.topology.vroutes import NetIds

from .demand import RouteSet, ordered_ranks


def head_locals(topology, local: Sequence[int], heads: int) -> list[tuple[int, int]]:
    """(local GPU, NIC) of a node's first `heads` GPUs with a NIC of their own (NCCL's
    NIC:GPU heads, one GPU a NIC)."""
    node = topology.node
    out, seen = [], set()
    for g in local:
        k = node.nic_of_gpu(g)
        if k is None or k in seen or k not in topology.rails:
            continue
        seen.add(k)
        out.append((g, k))
        if len(out) == heads:
            break
    return out


def collnet_demand(topology, ranks: Sequence[int], nbytes: float, algo: str, nics: int) -> Demand:
    """Bytes per link of one CollNet AllReduce of `nbytes` (`nics`: the NICs a node's share
    leaves by, collnet.net_nics: Direct's heads, Chain's chain heads)."""
    groups = ordered_ranks(topology, ranks)
    if len(groups) < 2:
        return Demand.empty()
    g = topology.gpus_per_node
    per_node = topology._per_node
    ids, vals = [], []
    pairs, weights = [], []
    heads_of = [head_locals(topology, [r % g for r in grp], nics) for grp in groups]
    for grp, hl in zip(groups, heads_of):
        if algo == "CollNetDirect" and len(grp) > 1:
            h = max(1, len(hl))
            head_ranks = {grp[0] - grp[0] % g + la for la, _ in hl}
            for r in grp:
                load = ((h - 1) + (len(grp) - 1)) / h if r in head_ranks else 1.0
                for link in topology.gpu_up_links(r, "nvlink") + topology.gpu_down_links(r, "nvlink"):
                    ids.append(link)
                    vals.append(load * nbytes)
        elif algo == "CollNetChain":
            for a, b in zip(grp, grp[1:]):
                pairs += [(a, b), (b, a)]
                weights += [nbytes, nbytes]
        node = grp[0] // g
        share = nbytes / max(1, len(hl))
        for la, k in hl:
            for o in topology._local(("gpu", la, "nic", k)) + topology._local(("nic", k, "gpu", la)):
                ids.append(node * per_node + o)
                vals.append(share)
    net = NetIds.of(topology)
    nodes = np.array([grp[0] // g for grp in groups], dtype=np.int64)
    # the rails the first node's heads use (every node of a communicator has the same shape)
    rails = {topology.rails.index(k): nbytes / max(1, len(hl)) for hl in heads_of[:1] for _, k in hl}
    for r, share in rails.items():
        ids += net.nic_up(nodes, r).tolist() + net.nic_down(nodes, r).tolist()
        vals += [share] * (2 * nodes.size)
    leaves = np.unique(net.leaf(nodes, 0))
    if leaves.size > 1:
        s = np.arange(net.n_spines)
        per_leaf = []
        if net.rail_optimised:
            for r, share in rails.items():
                per_leaf += [(leaf, share) for leaf in np.unique(net.leaf(nodes, r)).tolist()]
        else:
            per_leaf = [(leaf, sum(rails.values())) for leaf in leaves.tolist()]
        for leaf, share in per_leaf:
            ids += net.leaf_up(leaf, s).tolist() + net.spine_down(s, leaf).tolist()
            vals += [share / net.n_spines] * (2 * s.size)
        pods = np.unique(net.pod(leaves)) if net.tiers == 3 else np.zeros(1)
        if pods.size > 1:
            total = sum(rails.values())
            for pod in pods.tolist():
                ids += net.core_up(pod, s).tolist() + net.core_down(s, pod).tolist()
                vals += [total / net.n_spines] * (2 * s.size)
    d = Demand(links=np.asarray(ids, dtype=np.int64), bytes=np.asarray(vals, dtype=np.float64))
    if pairs:
        d = d + RouteSet.of(topology, pairs).demand(np.array(weights))
    return d.normalised()

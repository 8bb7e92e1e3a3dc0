"""A push or pull between every GPU worker and every co-located parameter server, without
routing the workers x servers pairs (33 million at 2,048 nodes).

Server s sits on node s (topology.servers, colocated). A push from GPU la of node a
to server s takes the PCIe tree to the server's CPU when s == a, else the GPU's own NIC
(rail k), the network, and node s's tree from NIC k to its CPU; a pull goes back the
same way. With bytes matrix[i, s] = row[i] * col[s] (collectives.traffic), every link's
bytes are a product of per-node totals: the links of GPU la's path on its node carry
row[a, la] x (the other servers' col), the NIC and tree links on the server's node carry
col[s] x (the other nodes' rows on that rail), and the leaf, spine and core links carry
the cross sums of alltoall_demand. Equal to the pairwise form (collectives.servers) to
rounding; tested on topologies small enough to route every pair.
"""

from __future__ import annotations

import numpy as np

from embsim.network import Demand
from embsim.topology.build import tree_offsets
from embsim.topology.vroutes import NetIds

from .alltoall_demand import _cross
from .pairwise import seqsum_vec
from .traffic import Traffic

# worker -> host ops: parameter-server pushes, and allgather table_device=cpu's gradient
# rows into host memory (strategies/host_tables.py); the others are host -> worker
PUSH_OPS = ("ps_push", "host_allgather")


def colocated_transfer(topo, op: str, traffic: Traffic) -> tuple[float, Demand]:
    """(latency s, demand) of a push (op 'ps_push') or pull over every GPU in rank order."""
    servers = topo.servers
    N, g, per_node = topo.n_nodes, topo.gpus_per_node, topo._per_node
    t, root = topo._template, servers.root
    R2 = traffic.row.reshape(N, g)                  # worker bytes factor, per (node, local GPU)
    C = traffic.col                                 # server factor, per server node
    nic = [topo._nic_of_local[la] for la in range(g)]
    push = op in PUSH_OPS
    node_vals = np.zeros((N, per_node))
    ids, vals = [], []
    C_tot = C.sum()
    others_C = C_tot - C                            # for node a: every other server
    for la in range(g):
        k = nic[la]
        same = tree_offsets(t, f"gpu{la}", root) if push else tree_offsets(t, root, f"gpu{la}")
        for o in same:
            node_vals[:, o] += R2[:, la] * C
        if N > 1:       # one node's servers are all local: no NIC on the way (there may be none)
            near = (topo._local(("gpu", la, "nic", k)) if push else topo._local(("nic", k, "gpu", la)))
            for o in near:
                node_vals[:, o] += R2[:, la] * others_C
    if N > 1:
        net = NetIds.of(topo)
        nodes = np.arange(N)
        rails = topo.rails
        Rk = np.zeros((N, len(rails)))
        for la in range(g):
            Rk[:, rails.index(nic[la])] += R2[:, la]
        for r, k in enumerate(rails):
            worker = Rk[:, r] * others_C                        # node a's GPUs on rail k, to other servers
            server = C * (Rk[:, r].sum() - Rk[:, r])           # server s, from other nodes' rail k
            far = tree_offsets(t, f"nic{k}", root) if push else tree_offsets(t, root, f"nic{k}")
            for o in far:
                node_vals[:, o] += server
            up, down = (worker, server) if push else (server, worker)
            ids += [net.nic_up(nodes, r), net.nic_down(nodes, r)]
            vals += [up, down]
        # a pair (GPU on rail r of node a, server s) carries Rk[a, r] * C[s]; over all rails
        # (a plain fat tree's leaf, a pod's spines) that is Rk[a].sum() * C[s]
        src, dst = (lambda r: Rk[:, r], lambda r: C) if push else (lambda r: C, lambda r: Rk[:, r])
        worker_all = Rk.sum(axis=1)
        src_all, dst_all = (worker_all, C) if push else (C, worker_all)
        if net.n_leaves > 1:
            S, s = net.n_spines, np.arange(net.n_spines)
            group = nodes // net.nodes_per_leaf
            n_groups = int(group.max()) + 1
            for r in range(len(rails)) if net.rail_optimised else (None,):
                A, B = (src(r), dst(r)) if r is not None else (src_all, dst_all)
                leaf = np.arange(n_groups) * net.n_rails + r if r is not None else np.arange(n_groups)
                ids += [net.leaf_up(leaf[:, None], s[None, :]).reshape(-1),
                        net.spine_down(s[None, :], leaf[:, None]).reshape(-1)]
                vals += [_cross(A, B, group, n_groups, nodes, S).reshape(-1),
                         _cross(B, A, group, n_groups, nodes, S).reshape(-1)]
            if net.tiers == 3:
                pod = net.pod(net.leaf(nodes, 0))
                n_pods = int(pod.max()) + 1
                A, B = src_all, dst_all
                p = np.arange(n_pods)
                ids += [net.core_up(p[:, None], s[None, :]).reshape(-1),
                        net.core_down(s[None, :], p[:, None]).reshape(-1)]
                vals += [_cross(A, B, pod, n_pods, nodes, S).reshape(-1),
                         _cross(B, A, pod, n_pods, nodes, S).reshape(-1)]
    cpu = C * traffic.row.sum()
    if np.all(traffic.row == 1.0):
        # every worker sends server s the same C[s] (a PS push or pull): the links at the two
        # ends, which set the transfer's time, in the pair-by-pair form's order of addition
        exact = _exact_ends(topo, push, C)
        if exact is not None:
            node_vals, nic_vals, cpu = exact
            if N > 1:
                ids, vals = ids[2 * len(topo.rails):], vals[2 * len(topo.rails):]
                ids = [i for r in range(len(topo.rails)) for i in (net.nic_up(nodes, r), net.nic_down(nodes, r))] + ids
                vals = [v for r in range(len(topo.rails)) for v in nic_vals[r]] + vals
    if push:                                        # every worker's share lands on server s's CPU
        ids.append(servers.cpu_base + np.arange(N))
        vals.append(cpu)
    ids.append((np.arange(N)[:, None] * per_node + np.arange(per_node)[None, :]).reshape(-1))
    vals.append(node_vals.reshape(-1))
    total = np.bincount(np.concatenate(ids), weights=np.concatenate(vals), minlength=topo.n_links)
    keep = np.flatnonzero(total > 0)
    return _latency(topo, push, R2, C), Demand(links=keep, bytes=total[keep])


def _latency(topo, push: bool, R2: np.ndarray, C: np.ndarray) -> float:
    """The longest route that carries bytes: route latency depends only on the GPU's local
    index and on how far the two nodes are apart (same node, leaf, pod or not), so one
    pair of each kind present stands for all (pairs with the first worker node and with
    the first server node cover every kind that occurs)."""
    servers, g = topo.servers, topo.gpus_per_node
    workers = np.flatnonzero(R2.sum(axis=1) > 0)
    homes = np.flatnonzero(C > 0)
    if workers.size == 0 or homes.size == 0:
        return 0.0
    pairs = [(int(workers[0]), int(s)) for s in homes] + [(int(a), int(homes[0])) for a in workers]
    lay = topo._layout

    def kind(a, s):
        if a == s:
            return 0
        if lay is None:
            return 1
        la_, ls_ = lay.leaf_of(a, 0), lay.leaf_of(s, 0)
        if la_ == ls_:
            return 1
        return 2 if lay.pod_of_leaf(la_) == lay.pod_of_leaf(ls_) else 3
    reps = {}
    for a, s in pairs:
        reps.setdefault(kind(a, s), (a, s))
    lat = topo._columns[2]
    best = 0.0
    for a, s in reps.values():
        for la in range(g):
            if R2[a, la] <= 0:
                continue
            r = a * g + la
            route = servers.push_routes[(r, s)] if push else servers.pull_routes[(s, r)]
            best = max(best, sum(lat[k] for k in route))
    return best


def _exact_ends(topo, push: bool, C: np.ndarray):
    """Node-local, NIC and server-CPU link bytes when every worker sends server s C[s],
    added in the pair-by-pair order (worker i outer, server s inner). A link on a worker's
    path sees, per local GPU using it, C[a] (its own node's server), C[s] for every other
    server, or both (every s in order); a link on a server's path sees C[s] once per worker
    reaching it. Returns None where one link mixes the two (then products are used)."""
    servers = topo.servers
    N, g, per_node, t, root = topo.n_nodes, topo.gpus_per_node, topo._per_node, topo._template, topo.servers.root
    nic = [topo._nic_of_local[la] for la in range(g)]
    rails = topo.rails
    worker: dict[int, list] = {}                    # offset -> [(la, "same" | "other" | "all")]
    count = np.zeros(per_node, dtype=np.int64)       # offset -> workers reaching the server through it
    for la in range(g):
        same = set(tree_offsets(t, f"gpu{la}", root) if push else tree_offsets(t, root, f"gpu{la}"))
        near = set()
        if N > 1:
            k = nic[la]
            near = set(topo._local(("gpu", la, "nic", k)) if push else topo._local(("nic", k, "gpu", la)))
        for o in sorted(same | near):
            worker.setdefault(o, []).append((la, "all" if o in same and o in near else
                                             ("same" if o in same else "other")))
    per_rail = np.bincount([rails.index(k) for k in nic], minlength=len(rails)) if N > 1 else []
    if N > 1:
        for r, k in enumerate(rails):
            for o in (tree_offsets(t, f"nic{k}", root) if push else tree_offsets(t, root, f"nic{k}")):
                count[o] += (N - 1) * per_rail[r]
    for o, entries in worker.items():
        kinds = {c for _, c in entries}
        if count[o] and kinds != {"same"}:
            return None
        if kinds == {"same"}:                        # all C[a]: count them with the server side
            count[o] += len(entries)
    cache: dict = {}

    def run(entries) -> np.ndarray:
        key = tuple(entries)
        if key not in cache:
            acc = np.zeros(N)
            for _, cond in entries:
                if cond == "same":
                    acc = acc + C
                else:
                    for s in range(N):
                        if cond == "all":
                            acc += C[s]
                        else:
                            acc[:s] += C[s]
                            acc[s + 1:] += C[s]
            cache[key] = acc
        return cache[key]
    node_vals = np.zeros((N, per_node))
    for o, entries in worker.items():
        if {c for _, c in entries} != {"same"}:
            node_vals[:, o] = run(entries)
    for o in np.flatnonzero(count):
        node_vals[:, o] = seqsum_vec(C, int(count[o]))
    nic_vals = []
    for r in range(len(rails)):
        mine = run([(la, "other") for la in range(g) if rails.index(nic[la]) == r]) if N > 1 else None
        theirs = seqsum_vec(C, (N - 1) * int(per_rail[r])) if N > 1 else None
        nic_vals.append((mine, theirs) if push else (theirs, mine))
    return node_vals, nic_vals, seqsum_vec(C, N * g)

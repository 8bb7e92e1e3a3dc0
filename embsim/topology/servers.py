"""Parameter-server processes on the cluster graph: their links and the routes between
GPU ranks and servers (BytePS / Parallax).

- dedicated: server machines of their own (ServerSpec: nodes, NICs, line rate) plugged
  into the GPU nodes' leaf switches (server NIC j on rail j, group 0's leaf), so pushes
  and pulls cross the workers' NICs, the fabric and the servers' NICs;
- colocated: one server process per GPU node (BytePS's co-located mode), reached through
  that node's NIC and PCIe tree, sharing both with the node's own GPUs.
Every server sums and applies what is pushed to it on its CPU: a `ps-cpu` link of
`sum_gbps` capacity at the end of every push route, so a hot server queues its pushes.
Pulls are reads of the updated rows and skip it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass


from .build import GB, US, Link, tree_offsets
from .spec import ServerSpec, TopologyError

PLACEMENTS = ("colocated", "dedicated")


@dataclass
class ServerFabric:
    placement: str
    count: int                     # server processes
    spec: ServerSpec
    push_routes: dict              # (rank, server) -> link ids
    pull_routes: dict              # (server, rank) -> link ids
    cpu_base: int = -1             # colocated: link id of server 0's ps-cpu link (server s: + s)
    root: str = ""                 # colocated: the template vertex the server process sits on


class LazyRoutes(dict):
    """A route table filled on first use: colocated servers on 2,048 nodes would be 33
    million routes, while a structured transfer (collectives.server_demand) needs none."""

    def __init__(self, make):
        super().__init__()
        self._make = make

    def __missing__(self, key):
        route = self[key] = self._make(*key)
        return route


def with_servers(topo, placement: str, spec: ServerSpec | None = None, cpu_kind: str = "ps-cpu"):
    """A copy of `topo` whose links include the servers' (appended: GPU link ids keep
    their meaning), with `.servers` describing them."""
    if placement not in PLACEMENTS:
        raise TopologyError(f"servers={placement!r}: expected one of {', '.join(PLACEMENTS)}")
    spec = spec or topo.node.servers or ServerSpec()
    out = copy.copy(topo)
    out.links, out._routes = list(topo.links), dict(topo._routes)
    extra = _colocated(out, spec, cpu_kind) if placement == "colocated" else _dedicated(out, spec)
    out.append_links(extra.pop("links"))
    out.servers = ServerFabric(placement, spec=spec, **extra)
    return out


def host_vertex(t) -> str | None:
    """The node template's vertex for the host CPU and its memory (the first socket, or a
    host-kind node's one vertex), None where the topology describes no PCIe/host tree."""
    return next((v for v in ("cpu0", "host") if v in t.vertices), None)


def _root(t) -> str:
    root = host_vertex(t)
    if root is not None:
        return root
    raise TopologyError("parameter servers on the GPU nodes need a PCIe or host description "
                        "(fabric.pcie_* or kind: host) to reach the CPU")


def _tree(topo, node: int, a: str, b: str) -> tuple[int, ...]:
    base = node * topo._per_node
    return tuple(base + o for o in tree_offsets(topo._template, a, b))


def _colocated(topo, spec: ServerSpec, cpu_kind: str = "ps-cpu") -> dict:
    t, base = topo._template, len(topo.links)
    root = _root(t)
    links = [(f"n{s}.{root}", f"n{s}.ps", cpu_kind, spec.sum_gbps * GB, 0.0) for s in range(topo.n_nodes)]

    def push(r, s):
        a, la = divmod(r, topo.gpus_per_node)
        if s == a:
            up = _tree(topo, a, f"gpu{la}", root)
        else:
            k = topo._nic_of_local[la]
            up = (topo._on_node(a, ("gpu", la, "nic", k)) + topo._network(a, k, s, k)
                  + _tree(topo, s, f"nic{k}", root))
        return up + (base + s,)

    def pull(s, r):
        a, la = divmod(r, topo.gpus_per_node)
        if s == a:
            return _tree(topo, a, root, f"gpu{la}")
        k = topo._nic_of_local[la]
        return (_tree(topo, s, root, f"nic{k}") + topo._network(s, k, a, k)
                + topo._on_node(a, ("nic", k, "gpu", la)))

    return {"count": topo.n_nodes, "push_routes": LazyRoutes(push), "pull_routes": LazyRoutes(pull),
            "links": links, "cpu_base": base, "root": root}


def _dedicated(topo, spec: ServerSpec) -> dict:
    if topo._layout is None:
        raise TopologyError(f"{topo.preset}: dedicated parameter servers need a network "
                            "(a topology of more than one node)")
    lay, idx, rails = topo._layout, topo._net_index, topo.rails
    count = spec.nodes or topo.n_nodes
    bw = (spec.nic_gbit or topo.node.nics.gbit) * 1e9 / 8
    lat = (topo.node.nics.latency_us if spec.latency_us is None else spec.latency_us) * US
    sw = topo.node.network.switch_latency_us * US
    links, ids = [], {}

    def add(u, v, kind, cap, latency):
        ids[(u, v)] = len(topo.links) + len(links)
        links.append((u, v, kind, cap, latency))

    for s in range(count):
        for j in range(spec.nics):
            leaf = f"leaf{lay.leaf_of(0, j % len(rails))}"
            add(f"ps{s}.nic{j}", leaf, "ps-nic", bw, lat / 2 + sw)
            add(leaf, f"ps{s}.nic{j}", "ps-nic", bw, lat / 2)
        add(f"ps{s}.nic", f"ps{s}.cpu", "ps-cpu", spec.sum_gbps * GB, 0.0)

    def fabric(leaf_a: str, leaf_b: str, a: int) -> tuple[int, ...]:
        return topo.leaf_to_leaf(int(leaf_a[4:]), int(leaf_b[4:]), lay.spine_for(a, 0))

    push, pull = {}, {}
    for r in range(topo.n_gpus):
        a, la = divmod(r, topo.gpus_per_node)
        k = topo._nic_of_local[la]
        rail = rails.index(k)
        j = rail % spec.nics                      # the server NIC on (or nearest) the worker's rail
        my_leaf, ps_leaf = f"leaf{lay.leaf_of(a, rail)}", f"leaf{lay.leaf_of(0, j % len(rails))}"
        nic = f"n{a}.nic{k}"
        for s in range(count):
            ps = f"ps{s}.nic{j}"
            push[(r, s)] = (topo._on_node(a, ("gpu", la, "nic", k)) + (idx[(nic, my_leaf)],)
                            + fabric(my_leaf, ps_leaf, a) + (ids[(ps_leaf, ps)], ids[(f"ps{s}.nic", f"ps{s}.cpu")]))
            pull[(s, r)] = ((ids[(ps, ps_leaf)],) + fabric(ps_leaf, my_leaf, a)
                            + (idx[(my_leaf, nic)],) + topo._on_node(a, ("nic", k, "gpu", la)))
    return {"count": count, "push_routes": push, "pull_routes": pull, "links": links}

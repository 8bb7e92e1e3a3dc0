"""Turn a NodeType and a cluster shape into vertices and directed links.

Every node is built from one template (same local links in the same order), so a
node's link ids are `node_base[node] + local offset` and intra-node routes are
computed once per local pair. The network (NIC <-> leaf <-> spine) is added after
all nodes. Units are converted here: GB/s -> bytes/s, Gb/s -> bytes/s, µs -> s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .spec import NodeType

GB = 1e9   # GB/s in the YAML are 1e9 bytes/s per direction
US = 1e-6


@dataclass(frozen=True)
class Link:
    id: int
    src: str
    dst: str
    kind: str          # "nvlink" | "c2c" | "pcie" | "cpu" | "host" | "nic" | "net"
    bandwidth: float   # bytes/s, this direction
    latency: float     # seconds


@dataclass
class NodeTemplate:
    """One node's vertices and links in local names ("gpu0", "nvs", "pcie1", "cpu0", "nic2", "host")."""

    vertices: dict[str, str] = field(default_factory=dict)          # local name -> vertex type
    links: list[tuple[str, str, str, float, float]] = field(default_factory=list)
    offset: dict[tuple[str, str], int] = field(default_factory=dict)  # (u, v) -> local link offset
    parent: dict[str, str] = field(default_factory=dict)             # PCIe / host tree, child -> parent
    nics: tuple[int, ...] = ()                                       # NIC indices present

    def add_vertex(self, name: str, vtype: str) -> None:
        self.vertices[name] = vtype

    def add_duplex(self, u: str, v: str, kind: str, gbps: float, latency_us: float) -> None:
        for a, b in ((u, v), (v, u)):
            self.offset[(a, b)] = len(self.links)
            self.links.append((a, b, kind, gbps * GB, latency_us * US))

    def graph(self):
        import networkx as nx   # only for meshes without a PCIe description (start-up time)
        g = nx.DiGraph()
        g.add_nodes_from(self.vertices)
        g.add_edges_from((u, v) for u, v, *_ in self.links)
        return g


def used_nics(node: NodeType, gpus_per_node: int) -> tuple[int, ...]:
    """NICs that serve at least one of the GPUs in use (a partial node drops the others)."""
    return tuple(k for k, gpus in enumerate(node.nics.gpus) if any(g < gpus_per_node for g in gpus))


def node_template(node: NodeType, gpus_per_node: int) -> NodeTemplate:
    fab, t = node.fabric, NodeTemplate()
    for g in range(gpus_per_node):
        t.add_vertex(f"gpu{g}", "gpu")
    if fab.kind == "nvswitch":
        t.add_vertex("nvs", "nvswitch")
        for g in range(gpus_per_node):
            t.add_duplex(f"gpu{g}", "nvs", "nvlink", fab.nvlink_gbps, fab.nvlink_latency_us)
    for a, b, links in fab.nvlink_pairs:
        if a < gpus_per_node and b < gpus_per_node:
            # A GPU's NVLink bandwidth is split evenly over its links.
            gbps = links * fab.nvlink_gbps / fab.nvlink_links_per_gpu
            t.add_duplex(f"gpu{a}", f"gpu{b}", "nvlink", gbps, fab.nvlink_latency_us)
    t.nics = used_nics(node, gpus_per_node)
    if fab.kind == "host":
        t.add_vertex("host", "host")
        for g in range(gpus_per_node):
            t.add_duplex(f"gpu{g}", "host", "host", fab.host_gbps, fab.host_latency_us)
            t.parent[f"gpu{g}"] = "host"
        for k in t.nics:
            t.add_vertex(f"nic{k}", "nic")
            t.add_duplex(f"nic{k}", "host", "host", fab.host_gbps, fab.host_latency_us)
            t.parent[f"nic{k}"] = "host"
    elif fab.has_pcie:
        _pcie_tree(node, gpus_per_node, t)
    return t


def pcie_place(fab, n_all: int, g: int) -> tuple[int, int]:
    """(socket, PCIe switch or -1 on a root port) of GPU `g` of a node's `n_all`: GPUs
    spread evenly over the switches (or, without switches, the sockets) in index order,
    and switches evenly over the sockets. The one placement rule of the PCIe tree, which
    the collective model reads too (host-staged flows per switch, NCCL's search replay)."""
    switches = int(fab.pcie_switches or 0)
    if switches:
        sw = g * switches // n_all
        return switch_socket(fab, sw), sw
    return g * int(fab.cpu_sockets or 1) // n_all, -1


def switch_socket(fab, sw: int) -> int:
    """The socket PCIe switch `sw` hangs off: switches spread evenly over the sockets."""
    return sw * int(fab.cpu_sockets or 1) // int(fab.pcie_switches)


def _pcie_tree(node: NodeType, gpus_per_node: int, t: NodeTemplate) -> None:
    fab, n_all = node.fabric, node.gpu.count
    sockets = fab.cpu_sockets
    for s in range(sockets):
        t.add_vertex(f"cpu{s}", "cpu")
    for s in range(sockets):
        for s2 in range(s + 1, sockets):
            t.add_duplex(f"cpu{s}", f"cpu{s2}", "cpu", fab.cpu_link_gbps, fab.cpu_latency_us)

    def gpu_parent(g: int) -> str:
        socket, sw = pcie_place(fab, n_all, g)
        return f"pcie{sw}" if sw >= 0 else f"cpu{socket}"

    devices = [(f"gpu{g}", gpu_parent(g)) for g in range(gpus_per_node)]
    # A NIC sits on the PCIe parent of the first GPU it serves (GPUDirect RDMA locality).
    devices += [(f"nic{k}", gpu_parent(node.nics.gpus[k][0])) for k in t.nics]
    needed = sorted({p for _, p in devices if p.startswith("pcie")}, key=lambda p: int(p[4:]))
    for sw in needed:
        socket = f"cpu{switch_socket(fab, int(sw[4:]))}"
        t.add_vertex(sw, "pcie-switch")
        t.add_duplex(sw, socket, "pcie", fab.pcie_gbps, fab.pcie_latency_us)
        t.parent[sw] = socket
    for dev, parent in devices:
        if dev.startswith("nic"):
            t.add_vertex(dev, "nic")
        if fab.c2c_gbps and dev.startswith("gpu"):
            # Grace Hopper: the GPU's host link is NVLink-C2C to its CPU (parse: root ports only)
            t.add_duplex(dev, parent, "c2c", fab.c2c_gbps, fab.c2c_latency_us)
        else:
            t.add_duplex(dev, parent, "pcie", fab.pcie_gbps, fab.pcie_latency_us)
        t.parent[dev] = parent


def tree_path(t: NodeTemplate, x: str, y: str) -> list[str]:
    """Vertex path between two devices through the PCIe/host tree (crossing sockets if needed)."""
    up_x = [x]
    while up_x[-1] in t.parent:
        up_x.append(t.parent[up_x[-1]])
    up_y = [y]
    while up_y[-1] in t.parent:
        up_y.append(t.parent[up_y[-1]])
    on_x = {v: i for i, v in enumerate(up_x)}
    for j, v in enumerate(up_y):
        if v in on_x:  # lowest common ancestor
            return up_x[:on_x[v] + 1] + up_y[:j][::-1]
    return up_x + up_y[::-1]  # different sockets: root-to-root over the CPU link


def path_offsets(t: NodeTemplate, verts: list[str]) -> tuple[int, ...]:
    """Local link offsets along a vertex path of the node."""
    return tuple(t.offset[(u, v)] for u, v in zip(verts, verts[1:]))


def tree_offsets(t: NodeTemplate, x: str, y: str) -> tuple[int, ...]:
    """Local link offsets of tree_path(t, x, y)."""
    return path_offsets(t, tree_path(t, x, y))


def local_gpu_path(node: NodeType, t: NodeTemplate, a: int, b: int) -> list[str]:
    """Vertex path GPU a -> GPU b inside one node, the way NCCL's P2P transport goes."""
    u, v = f"gpu{a}", f"gpu{b}"
    if node.fabric.kind == "nvswitch":
        return [u, "nvs", v]
    if (u, v) in t.offset:  # direct NVLink pair
        return [u, v]
    if t.parent:
        return tree_path(t, u, v)
    # NVLink-only mesh without a PCIe description: hop over NVLink peers.
    import networkx as nx
    return nx.shortest_path(t.graph(), u, v)


def _components(vertices: list[str], edges: list[tuple[str, str]]) -> list[list[str]]:
    """Strongly connected components (Kosaraju; node templates are tiny)."""
    out_edges: dict[str, list[str]] = {v: [] for v in vertices}
    in_edges: dict[str, list[str]] = {v: [] for v in vertices}
    for u, v in edges:
        out_edges[u].append(v)
        in_edges[v].append(u)
    order, seen = [], set()
    for root in vertices:
        if root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(out_edges[root]))]
        while stack:
            v, it = stack[-1]
            nxt = next((w for w in it if w not in seen), None)
            if nxt is None:
                order.append(v)
                stack.pop()
            else:
                seen.add(nxt)
                stack.append((nxt, iter(out_edges[nxt])))
    comps, assigned = [], set()
    for root in reversed(order):
        if root in assigned:
            continue
        comp, todo = [], [root]
        assigned.add(root)
        while todo:
            v = todo.pop()
            comp.append(v)
            for w in in_edges[v]:
                if w not in assigned:
                    assigned.add(w)
                    todo.append(w)
        comps.append(comp)
    return comps


def disconnected_pair(t: NodeTemplate) -> tuple[str, str] | None:
    """Two vertices of the template that cannot reach each other, or None if it is one
    strongly connected graph (the first vertices of the two first components, sorted)."""
    comps = _components(list(t.vertices), [(u, v) for u, v, *_ in t.links])
    if len(comps) <= 1:
        return None
    components = sorted((sorted(c) for c in comps), key=lambda c: c[0])
    return components[0][0], components[1][0]


@dataclass
class NetworkLayout:
    """Where each NIC plugs in: leaf switch per (node group, rail), the spine layer above
    the leaves and, where the leaves outnumber a spine switch's ports, a core layer above
    pods of leaves (a three-tier fat tree)."""

    n_nodes: int
    rails: tuple[int, ...]       # NIC indices in use, rail r = rails.index(nic)
    rail_optimised: bool
    nodes_per_leaf: int
    n_spines: int                # logical spines (per pod with three tiers)
    radix: int | None = None     # ports per switch; None: any number of leaves per spine

    @property
    def n_groups(self) -> int:
        return math.ceil(self.n_nodes / self.nodes_per_leaf)

    @property
    def leaves_per_group(self) -> int:
        return len(self.rails) if self.rail_optimised else 1

    @property
    def n_leaves(self) -> int:
        return self.n_groups * self.leaves_per_group

    @property
    def tiers(self) -> int:
        """Switch tiers: 1 (one leaf per rail), 2 (leaf-spine) or 3 (leaf-spine-core)."""
        if self.n_leaves <= 1:
            return 1
        return 3 if self.radix is not None and self.n_leaves > self.radix else 2

    @property
    def groups_per_pod(self) -> int:
        """Node groups whose leaves share one pod's spines (three tiers; else all groups)."""
        if self.tiers < 3:
            return self.n_groups
        return max(1, (self.radix // 2) // self.leaves_per_group)

    @property
    def n_pods(self) -> int:
        return math.ceil(self.n_groups / self.groups_per_pod)

    def leaf_of(self, node: int, rail: int) -> int:
        group = node // self.nodes_per_leaf
        return group * len(self.rails) + rail if self.rail_optimised else group

    def pod_of_leaf(self, leaf: int) -> int:
        return (leaf // self.leaves_per_group) // self.groups_per_pod

    def spine_for(self, src_node: int, dst_node: int) -> int:
        # Deterministic ECMP: spread node pairs over spines.
        return (src_node + dst_node) % self.n_spines

    def spine_name(self, pod: int, spine: int) -> str:
        return f"spine{spine}" if self.tiers < 3 else f"spine{pod}.{spine}"


def network_layout(node: NodeType, n_nodes: int, rails: tuple[int, ...]) -> NetworkLayout:
    net = node.network
    npl = min(net.nodes_per_leaf or n_nodes, n_nodes)
    return NetworkLayout(n_nodes=n_nodes, rails=rails, rail_optimised=net.kind == "rail-fat-tree",
                         nodes_per_leaf=npl, n_spines=net.spines, radix=net.radix)


def network_links(node: NodeType, layout: NetworkLayout):
    """(src, dst, kind, bytes/s, s) for NIC<->leaf, leaf<->spine and spine<->core, in a
    fixed order (NetworkIds turns positions in it into link ids)."""
    nic_bw = node.nics.gbit * 1e9 / 8
    nic_lat, sw_lat = node.nics.latency_us * US, node.network.switch_latency_us * US
    out, ports = [], [0] * layout.n_leaves
    for n in range(layout.n_nodes):
        for r, k in enumerate(layout.rails):
            leaf = layout.leaf_of(n, r)
            ports[leaf] += 1
            # NIC latency splits over sender and receiver; the leaf's traversal rides on the uplink.
            out.append((f"n{n}.nic{k}", f"leaf{leaf}", "nic", nic_bw, nic_lat / 2 + sw_lat))
            out.append((f"leaf{leaf}", f"n{n}.nic{k}", "nic", nic_bw, nic_lat / 2))
    if layout.n_leaves > 1:
        pod_up = [0.0] * layout.n_pods
        for leaf in range(layout.n_leaves):
            # Total uplink = total downlink / oversubscription, split evenly over the spines.
            up = ports[leaf] * nic_bw / node.network.oversubscription / layout.n_spines
            pod = layout.pod_of_leaf(leaf)
            pod_up[pod] += up
            for s in range(layout.n_spines):
                spine = layout.spine_name(pod, s)
                out.append((f"leaf{leaf}", spine, "net", up, sw_lat))
                out.append((spine, f"leaf{leaf}", "net", up, sw_lat))
        if layout.tiers == 3:
            # Each pod spine's core uplink = its leaves' uplinks / the spine tier's oversubscription.
            for pod in range(layout.n_pods):
                up = pod_up[pod] / node.network.spine_oversubscription
                for s in range(layout.n_spines):
                    out.append((layout.spine_name(pod, s), "core", "net", up, sw_lat))
                    out.append(("core", layout.spine_name(pod, s), "net", up, sw_lat))
    return out


def switch_counts(node: NodeType, layout: NetworkLayout) -> dict:
    """Physical switches per tier that the spec implies (radix-port switches, full
    bisection divided by each tier's oversubscription); logical counts without a radix."""
    net = node.network
    leaves = layout.n_leaves
    if layout.tiers == 1 or layout.n_leaves <= 1:
        return {"leaf": leaves}
    if net.radix is None:
        out = {"leaf": leaves, "spine": layout.n_spines}
        return out
    radix = net.radix
    down = layout.nodes_per_leaf * (1 if layout.rail_optimised else len(layout.rails))
    leaf_up = math.ceil(down / net.oversubscription)
    if layout.tiers == 2:
        return {"leaf": leaves, "spine": math.ceil(leaves * leaf_up / radix)}
    spines = math.ceil(leaves * leaf_up / (radix // 2))   # half a pod spine's ports face down
    core = math.ceil(spines * (radix // 2) / net.spine_oversubscription / radix)
    return {"leaf": leaves, "spine": spines, "core": core}

"""Topology: the cluster graph, its directed links, and routes between GPU ranks.

Routes are structural (no generic shortest-path search) and computed lazily with a
cache, so a 1024-GPU cluster builds in milliseconds and only the pairs a simulation
asks for are ever routed. Inter-node routes follow NCCL's PXN rail alignment on
NVLink boxes: data first moves over NVLink to the local GPU on the destination's
rail, then leaves through that GPU's NIC.
"""

from __future__ import annotations

import dataclasses
from functools import cached_property

from .build import (Link, NodeTemplate, disconnected_pair, local_gpu_path, network_layout,
                    network_links, node_template, path_offsets, tree_offsets)
from .spec import NodeType, TopologyError


class Topology:
    def __init__(self, node: NodeType, n_nodes: int, gpus_per_node: int, preset: str | None = None,
                 overrides: dict | None = None, alias_note: str = ""):
        if n_nodes < 1 or not 1 <= gpus_per_node <= node.gpu.count:
            raise TopologyError(f"{node.source or node.name}: cannot make {n_nodes} x {gpus_per_node} "
                                f"of a {node.gpu.count}-GPU node")
        if n_nodes > 1 and node.nics.count == 0:
            raise TopologyError(f"{node.source or node.name}: {n_nodes} nodes need NICs, "
                                "but nics.count is 0 (single node only)")
        self.node = node
        self.preset = preset or node.name
        # set when the user's name was another name for the preset (topology/aliases.py)
        self.alias_note = alias_note
        self.n_nodes, self.gpus_per_node = n_nodes, gpus_per_node
        self.n_gpus = n_nodes * gpus_per_node
        self.overrides = dict(overrides or {})
        self._template: NodeTemplate = node_template(node, gpus_per_node)
        self._rails = self._template.nics if n_nodes > 1 else ()
        self._layout = network_layout(node, n_nodes, self._rails) if n_nodes > 1 else None
        self._build_links()
        self._check_connected()
        self._routes: dict[tuple[int, int], tuple[int, ...]] = {}
        self._local_paths: dict[tuple, tuple[int, ...]] = {}
        self._gpu_link_offsets: dict[tuple, tuple[int, ...]] = {}
        # First NIC serving each local GPU, and the GPU that proxies (PXN) for each NIC.
        self._nic_of_local = [node.nic_of_gpu(g) for g in range(gpus_per_node)]
        self._proxy_of_nic = {k: min(g for g in node.nics.gpus[k] if g < gpus_per_node)
                              for k in self._template.nics}

    # ----------------------------------------------------------------- building
    def _build_links(self) -> None:
        # Per-link columns are tiled from the node template; the Link objects with vertex
        # names are made only when asked for (`links`), since at thousands of nodes they
        # are most of a Topology's build time and memory.
        t = self._template
        per_node = len(t.links)
        self._per_node = per_node
        self._net_base = per_node * self.n_nodes
        net = network_links(self.node, self._layout) if self._layout is not None else []
        self._net_links = net
        self._net_index: dict[tuple[str, str], int] = {
            (u, v): self._net_base + i for i, (u, v, *_) in enumerate(net)}
        # per-link columns as lists (kind, bytes/s, s); numpy arrays are made on first use
        # so that `topology show` starts without importing numpy
        self._columns = tuple([l[k] for l in t.links] * self.n_nodes + [l[k] for l in net] for k in (2, 3, 4))
        self.n_links = len(self._columns[0])

    @cached_property
    def capacity(self):
        """Bytes/s of every link, indexed by link id (numpy float64)."""
        import numpy as np
        return np.array(self._columns[1], dtype=np.float64)

    @cached_property
    def link_kinds(self):
        """Kind of every link ("nvlink", "c2c", "pcie", "cpu", "host", "nic", "net"), numpy str array."""
        import numpy as np
        return np.array(self._columns[0], dtype=str)

    @cached_property
    def link_latency(self):
        """Seconds per traversal of every link (numpy float64)."""
        import numpy as np
        return np.array(self._columns[2], dtype=np.float64)

    def append_links(self, extra) -> None:
        """Add links (src, dst, kind, bytes/s, s) after the existing ones (ids keep their
        meaning), e.g. parameter servers' (topology.servers); per-link arrays follow."""
        extra = list(extra)
        links = self.links
        links += [Link(len(links) + i, *l) for i, l in enumerate(extra)]
        self._columns = tuple(col + [l[k] for l in extra] for col, k in zip(self._columns, (2, 3, 4)))
        self.n_links = len(self._columns[0])
        for name in ("capacity", "link_kinds", "link_latency", "_kind_ids", "graph"):
            self.__dict__.pop(name, None)

    @cached_property
    def links(self) -> list[Link]:
        """Every directed link as a Link (id, vertex names, kind, bytes/s, s)."""
        out: list[Link] = []
        for n in range(self.n_nodes):
            for u, v, kind, bw, lat in self._template.links:
                out.append(Link(len(out), f"n{n}.{u}", f"n{n}.{v}", kind, bw, lat))
        for u, v, kind, bw, lat in self._net_links:
            out.append(Link(len(out), u, v, kind, bw, lat))
        return out

    @cached_property
    def graph(self):
        """The whole cluster as a networkx graph (built on first use: simulations never
        need it, and at thousands of nodes it is the slowest part of a Topology)."""
        import networkx as nx   # imported here: nothing on a simulation's path needs it
        t, g = self._template, nx.DiGraph()
        for n in range(self.n_nodes):
            g.add_nodes_from((f"n{n}.{v}", {"type": vt, "node": n}) for v, vt in t.vertices.items())
        g.add_nodes_from((v, {"type": kind}) for v, kind in self.switches())
        g.add_edges_from((l.src, l.dst, {"id": l.id, "kind": l.kind, "bandwidth": l.bandwidth,
                                         "latency": l.latency}) for l in self.links)
        return g

    def switches(self) -> list[tuple[str, str]]:
        """(name, tier) of every network switch vertex: leaf, spine, core."""
        lay = self._layout
        if lay is None:
            return []
        out = [(f"leaf{i}", "leaf") for i in range(lay.n_leaves)]
        if lay.tiers >= 2:
            out += [(lay.spine_name(p, s), "spine") for p in range(lay.n_pods) for s in range(lay.n_spines)]
        if lay.tiers == 3:
            out.append(("core", "core"))
        return out

    def _check_connected(self) -> None:
        # Every node is a copy of one template and the network joins every NIC to a leaf
        # and every leaf to the spines, so the cluster is connected iff the template is.
        pair = disconnected_pair(self._template)
        if pair is None:
            return
        raise TopologyError(f"{self.node.source or self.node.name}: graph is disconnected: "
                            f"n0.{pair[0]} cannot reach n0.{pair[1]} (check fabric.nvlink_pairs / pcie_*)")

    # ------------------------------------------------------------------ ranks
    def rank(self, node: int, local: int) -> int:
        if not (0 <= node < self.n_nodes and 0 <= local < self.gpus_per_node):
            raise IndexError(f"no GPU {local} on node {node} in a {self.n_nodes}x{self.gpus_per_node} topology")
        return node * self.gpus_per_node + local

    def node_of(self, rank: int) -> int:
        self._check_rank(rank)
        return rank // self.gpus_per_node

    def local_of(self, rank: int) -> int:
        self._check_rank(rank)
        return rank % self.gpus_per_node

    def nic_for(self, rank: int) -> int | None:
        """Index of the NIC that serves this GPU (first in nics.gpus); None without NICs."""
        return self._nic_of_local[self.local_of(rank)]

    def pxn_proxy(self, rank: int, nic: int) -> int:
        """Rank on the same node that sends through `nic` for this GPU (itself if it is on that rail)."""
        local = self.local_of(rank)
        if nic not in self._proxy_of_nic:
            raise IndexError(f"no NIC {nic} in use (NICs in use: {sorted(self._proxy_of_nic)})")
        if local in self.node.nics.gpus[nic]:
            return rank
        return self.rank(self.node_of(rank), self._proxy_of_nic[nic])

    def _check_rank(self, rank: int) -> None:
        if not 0 <= rank < self.n_gpus:
            raise IndexError(f"rank {rank} out of range 0..{self.n_gpus - 1}")

    # ----------------------------------------------------------------- routes
    def route(self, src: int, dst: int) -> tuple[int, ...]:
        """Link ids from GPU rank src to GPU rank dst (cached; src == dst -> ())."""
        key = (src, dst)
        hit = self._routes.get(key)
        if hit is not None:
            return hit
        self._check_rank(src)
        self._check_rank(dst)
        if src == dst:
            path: tuple[int, ...] = ()
        else:
            a, la = divmod(src, self.gpus_per_node)
            b, lb = divmod(dst, self.gpus_per_node)
            if a == b:
                path = self._on_node(a, ("gpu", la, "gpu", lb))
            else:
                path = self._inter_node(a, la, b, lb)
        self._routes[key] = path
        return path

    def _inter_node(self, a: int, la: int, b: int, lb: int) -> tuple[int, ...]:
        head, src_nic, rail_nic, tail = self.remote_template(la, lb)
        base_a, base_b = a * self._per_node, b * self._per_node
        return (tuple(base_a + o for o in head) + self._network(a, src_nic, b, rail_nic)
                + tuple(base_b + o for o in tail))

    def remote_template(self, la: int, lb: int, same_nic: bool = False
                        ) -> tuple[tuple[int, ...], int, int, tuple[int, ...]]:
        """How local GPU la reaches local GPU lb of another node, the same for every pair of
        nodes: (link offsets on the source node, source NIC, destination NIC = the
        destination's rail, link offsets on the destination node).

        `same_nic`: the hop of a ring or tree channel, which NCCL's search sends out of the
        NIC it came in by (graph->inter[2c] == inter[2c+1] unless it must cross NICs): the
        destination's rail end to end, over the node's PCIe to that NIC where no NVLink
        reaches its GPU. A point-to-point send leaves by the sender's own NIC (or PXN)."""
        key = ("remote", la, lb, same_nic)
        hit = self._local_paths.get(key)
        if hit is not None:
            return hit
        rail_nic = self._nic_of_local[lb]           # the destination's rail
        # The source itself if that NIC serves it, else the rail's first local GPU.
        proxy = la if la in self.node.nics.gpus[rail_nic] else self._proxy_of_nic[rail_nic]
        if self.node.fabric.has_nvlink and self._nvlink_only(la, proxy):
            # PXN: NVLink to the rail-aligned GPU, out of its NIC, same rail end to end.
            src_nic = rail_nic
            head = self._local(("gpu", la, "gpu", proxy)) + self._local(("gpu", proxy, "nic", src_nic))
        elif same_nic:
            src_nic = rail_nic
            head = self._local(("gpu", la, "nic", src_nic))
        else:
            src_nic = self._nic_of_local[la]
            head = self._local(("gpu", la, "nic", src_nic))
        hit = (head, src_nic, rail_nic, self._local(("nic", rail_nic, "gpu", lb)))
        self._local_paths[key] = hit
        return hit

    def _nvlink_only(self, la: int, lb: int) -> bool:
        if la == lb:
            return True
        offsets = self._local(("gpu", la, "gpu", lb))
        return all(self._template.links[o][2] == "nvlink" for o in offsets)

    def _local(self, key: tuple) -> tuple[int, ...]:
        """Local link offsets for ("gpu"|"nic", i, "gpu"|"nic", j) inside one node (cached)."""
        hit = self._local_paths.get(key)
        if hit is not None:
            return hit
        kind_a, i, kind_b, j = key
        t = self._template
        if kind_a == kind_b == "gpu":
            hit = path_offsets(t, [] if i == j else local_gpu_path(self.node, t, i, j))
        else:
            hit = tree_offsets(t, f"{kind_a}{i}", f"{kind_b}{j}")
        self._local_paths[key] = hit
        return hit

    def _on_node(self, node: int, key: tuple) -> tuple[int, ...]:
        base = node * self._per_node
        return tuple(base + o for o in self._local(key))

    def _network(self, a: int, nic_a: int, b: int, nic_b: int) -> tuple[int, ...]:
        lay, idx = self._layout, self._net_index
        ra, rb = self._rails.index(nic_a), self._rails.index(nic_b)
        leaf_a, leaf_b = lay.leaf_of(a, ra), lay.leaf_of(b, rb)
        src, dst = f"n{a}.nic{nic_a}", f"n{b}.nic{nic_b}"
        return ((idx[(src, f"leaf{leaf_a}")],) + self.leaf_to_leaf(leaf_a, leaf_b, lay.spine_for(a, b))
                + (idx[(f"leaf{leaf_b}", dst)],))

    def leaf_to_leaf(self, leaf_a: int, leaf_b: int, spine: int) -> tuple[int, ...]:
        """Switch links from leaf a to leaf b through spine index `spine` (and the core
        when their pods differ); () for the same leaf."""
        if leaf_a == leaf_b:
            return ()
        lay, idx = self._layout, self._net_index
        la, lb = f"leaf{leaf_a}", f"leaf{leaf_b}"
        pa, pb = lay.pod_of_leaf(leaf_a), lay.pod_of_leaf(leaf_b)
        sa, sb = lay.spine_name(pa, spine), lay.spine_name(pb, spine)
        if pa == pb:
            return idx[(la, sa)], idx[(sa, lb)]
        return idx[(la, sa)], idx[(sa, "core")], idx[("core", sb)], idx[(sb, lb)]

    # ------------------------------------------------------- helpers for layers
    def gpu_up_links(self, rank: int, kind: str | None = None) -> tuple[int, ...]:
        """Links from a GPU into its node's fabric (optionally only one kind)."""
        return self._device_links(rank, outgoing=True, kind=kind)

    def gpu_down_links(self, rank: int, kind: str | None = None) -> tuple[int, ...]:
        """Links from the node's fabric into a GPU (optionally only one kind)."""
        return self._device_links(rank, outgoing=False, kind=kind)

    def _device_links(self, rank: int, outgoing: bool, kind: str | None) -> tuple[int, ...]:
        n, local = self.node_of(rank), self.local_of(rank)
        key = (local, outgoing, kind)
        offsets = self._gpu_link_offsets.get(key)
        if offsets is None:
            me = f"gpu{local}"
            offsets = tuple(o for o, (u, v, k, *_) in enumerate(self._template.links)
                            if (u if outgoing else v) == me and (kind is None or k == kind))
            self._gpu_link_offsets[key] = offsets
        base = n * self._per_node
        return tuple(base + o for o in offsets)

    def nic_links(self, node: int, nic: int) -> tuple[int, int]:
        """(up, down) link ids between a node's NIC and its leaf switch (the NIC line rate)."""
        if self._layout is None:
            raise TopologyError(f"{self.preset}: a single node has no network links")
        if not 0 <= node < self.n_nodes or nic not in self._rails:
            raise IndexError(f"no NIC {nic} on node {node} (NICs in use: {list(self._rails)})")
        leaf = f"leaf{self._layout.leaf_of(node, self._rails.index(nic))}"
        name = f"n{node}.nic{nic}"
        return self._net_index[(name, leaf)], self._net_index[(leaf, name)]

    @property
    def rails(self) -> tuple[int, ...]:
        """NIC indices in use on every node (empty on a single node)."""
        return self._rails

    @cached_property
    def _kind_ids(self) -> dict:
        import numpy as np
        kinds = sorted(set(self.link_kinds.tolist()))
        return {k: np.flatnonzero(self.link_kinds == k) for k in kinds}

    def link_kinds_in_order(self) -> list[str]:
        """Kinds of link present, in order of first appearance."""
        return list(dict.fromkeys(self._columns[0]))

    def link_ids_of_kind(self, kind: str):
        """Ids (ascending, numpy int64) of every link of one kind; empty if there is none."""
        import numpy as np
        return self._kind_ids.get(kind, np.zeros(0, dtype=np.int64))

    def route_latency(self, src: int, dst: int) -> float:
        """Sum of link latencies along route(src, dst), seconds."""
        return float(sum(self._columns[2][i] for i in self.route(src, dst)))

    # ------------------------------------------------------------- what-ifs
    def with_overrides(self, nic_gbit: float | None = None, nvlink_gbps: float | None = None,
                       oversubscription: float | None = None) -> "Topology":
        """A copy with different hardware (for sweeps): NIC line rate, NVLink GB/s, oversubscription."""
        node, done = self.node, dict(self.overrides)
        for name, value in (("nic_gbit", nic_gbit), ("nvlink_gbps", nvlink_gbps),
                            ("oversubscription", oversubscription)):
            if value is not None and not (isinstance(value, (int, float)) and value > 0):
                raise TopologyError(f"override {name}: must be a positive number, got {value!r}")
        if nic_gbit is not None:
            if node.nics.count == 0:
                raise TopologyError(f"override nic_gbit: {self.preset} has no NICs")
            node = dataclasses.replace(node, nics=dataclasses.replace(node.nics, gbit=float(nic_gbit)))
            done["nic_gbit"] = float(nic_gbit)
        if nvlink_gbps is not None:
            if not node.fabric.has_nvlink:
                raise TopologyError(f"override nvlink_gbps: {self.preset} has no NVLink "
                                    f"(fabric {node.fabric.kind})")
            scale = node.fabric.nvlink_whatif_scale * float(nvlink_gbps) / node.fabric.nvlink_gbps
            node = dataclasses.replace(node, fabric=dataclasses.replace(
                node.fabric, nvlink_gbps=float(nvlink_gbps), nvlink_whatif_scale=scale))
            done["nvlink_gbps"] = float(nvlink_gbps)
        if oversubscription is not None:
            node = dataclasses.replace(node, network=dataclasses.replace(
                node.network, oversubscription=float(oversubscription)))
            done["oversubscription"] = float(oversubscription)
        return Topology(node, self.n_nodes, self.gpus_per_node, self.preset, overrides=done,
                        alias_note=self.alias_note)

    # --------------------------------------------------------------- summary
    def summary(self) -> dict:
        from .summary import topology_summary
        return topology_summary(self)

    def __repr__(self) -> str:
        return f"Topology({self.preset}:{self.n_nodes}x{self.gpus_per_node}, {self.n_links} links)"

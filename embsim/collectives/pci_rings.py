"""NCCL's bandwidth accounting for a ring or chain channel over a node's PCIe tree.

NCCL's graph search (graph/search.cc) places a channel by walking every GPU-to-GPU path it
uses and subtracting the channel's speed from each link on it (followPath, search.cc
69-104 of v2.21.5-1; the same code v2.18.1-v2.30.7). What a path looks like on a PCIe box:

- Paths are typed by the links they cross (paths.cc 89-99): only PCIe links through one
  switch are PIX; a path through a CPU's root complex is PHB; one crossing a socket link
  is SYS (topo.h PATH_PIX 3, PATH_PHB 6, PATH_SYS 7).
- A GPU pair without peer-to-peer (the driver says no: paths.cc 316-332, the NVML
  p2pStatus; or the path is beyond NCCL's P2P level, PXB on Intel/ARM, paths.cc 289-298;
  from 2.25 on every CPU but AMD with <= 2 GPUs) has its path rebuilt through the destination's CPU ("Divert all
  traffic through the CPU", paths.cc 568-578; addInterStep 176-191): two GPUs behind one
  switch then go up through the switch's uplink and back down it, type PHB.
- followPath charges a PHB path that crosses an x86 Intel CPU node 6/5 of the channel's
  speed on every PCI link (search.cc 70-79; topo.h 31 INTEL_P2P_OVERHEAD(bw) = bw*6/5);
  other links (the socket link) and other path types are charged the speed itself.
- Links are per direction (each node holds its own outgoing links), so a ring's hops
  a->b and b->a load different links, except a switch uplink both hops climb.
- Link bandwidths as NCCL's topology holds them: a PCI link width x speed / 80 (topo.cc
  459-460; shape.pcie_gbps_nccl, passed in: Gen3 x16 12 GB/s = PCI_BW, topo.h 19), the
  socket link its CPU-model constant (topo.cc 74-77, topo.h 20-22: QPI_BW 6, SKL_QPI_BW 10,
  AMD_BW 16; SRP_QPI_BW 22 from 2.26): the topology file's cpu_link_gbps, which the
  presets set to NCCL's figure.

A channel fits at speed s when every link keeps the speed it is charged; `channels_at`
returns how many identical channels do (the search adds them one by one until one fails,
search.cc 453-472, so n fit while n x load <= bandwidth on every link).

The ring visits the node's GPUs in PCI (index) order, the order NCCL's search tries first
(FORCED_ORDER_PCI, search.cc 673); it keeps the best of all it tries (search.cc 380), and on
these symmetric trees no other order loads the binding link less (l40s-roce: an order
avoiding the PHB hops crosses the socket link twice each way, 1 x 11 < 1 x 20). On one node a tree channel is that chain without the closing hop (only
rings loop back: backToFirstRank, search.cc 533-542). Several nodes: the chain's two ends
meet the NIC instead; its links are counted here as the closed ring's (the GPU-NIC hop
is the NIC constraint channels.py already applies).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# topo.h 31 (v2.21.5-1; 39 in v2.30.7): INTEL_P2P_OVERHEAD(bw) (bw*6/5), what followPath
# charges a PHB path through an Intel root complex on its PCI links (search.cc 70-79).
INTEL_P2P_OVERHEAD = 6.0 / 5.0


@dataclass(frozen=True)
class PciLayout:
    """A node's GPUs as NCCL's topology sees them, in the communicator's local order."""

    gpus: tuple[tuple[int, int], ...]   # (socket, PCIe switch or -1 on a root port) per GPU
    p2p: bool                           # the driver allows peer-to-peer (NVML p2pStatus OK)
    intel: bool                         # x86 Intel host: PHB paths pay INTEL_P2P_OVERHEAD
    pci_bw: float                       # NCCL's PCI link bandwidth, GB/s (GPU and switch uplink)
    cpu_bw: float                       # NCCL's socket-to-socket link, GB/s
    nvlink: frozenset = frozenset()     # (i, j) local index pairs joined by an NVLink bridge

    def hop(self, a: int, b: int) -> tuple[str, list[tuple]]:
        """(NCCL path type, directed links) of the path GPU a -> GPU b."""
        if (a, b) in self.nvlink or (b, a) in self.nvlink:
            return "NVL", []
        (sa, wa), (sb, wb) = self.gpus[a], self.gpus[b]
        if sa == sb and wa == wb and wa >= 0 and self.p2p:
            return "PIX", [("up", a), ("down", b)]
        links = [("up", a)]
        if wa >= 0:
            links.append(("sw_up", wa))
        kind = "PHB"
        if sa != sb:
            links.append(("cpu", sa, sb))
            kind = "SYS"
        if wb >= 0:
            links.append(("sw_down", wb))
        links.append(("down", b))
        return kind, links

    def loads(self, chain: bool) -> dict[tuple, float]:
        """Per directed link: what one channel at speed 1 is charged (the ring, or the
        chain without its closing hop)."""
        n = len(self.gpus)
        out: dict[tuple, float] = {}
        for i in range(n - 1 if chain else n):
            kind, links = self.hop(i, (i + 1) % n)
            factor = INTEL_P2P_OVERHEAD if (kind == "PHB" and self.intel) else 1.0
            for link in links:
                f = 1.0 if link[0] == "cpu" else factor     # fwBw: pciBw on LINK_PCI only
                out[link] = out.get(link, 0.0) + f
        return out

    def capacity(self, link: tuple) -> float:
        return self.cpu_bw if link[0] == "cpu" else self.pci_bw

    def channels_at(self, speed: float, chain: bool = False) -> int:
        """Identical channels that fit at `speed` GB/s each (NCCL's SUB_ROUND keeps 1e-3)."""
        loads = self.loads(chain)
        if not loads:
            return 1 << 30
        return min(int(math.floor(self.capacity(k) / (w * speed) + 1e-6)) for k, w in loads.items())


def layout_of(topology, ranks, pci_bw: float) -> PciLayout | None:
    """The PciLayout of the node with most of `ranks` (None: no PCIe tree, or NVSwitch);
    `pci_bw`: NCCL's PCI link bandwidth (shape.pcie_gbps_nccl)."""
    node = topology.node
    fab = node.fabric
    if fab.kind == "nvswitch" or not fab.has_pcie:
        return None
    gpn = topology.gpus_per_node
    per_node: dict[int, list[int]] = {}
    for r in ranks:
        per_node.setdefault(topology.node_of(r), []).append(r % gpn)
    local = sorted(max(per_node.values(), key=len))
    n_all = node.gpu.count
    sockets = int(fab.cpu_sockets or 1)
    switches = int(fab.pcie_switches or 0)
    place = []
    for g in local:   # as topology/build.py _pcie_tree spreads them, in index order
        if switches:
            sw = g * switches // n_all
            place.append((sw * sockets // switches, sw))
        else:
            place.append((g * sockets // n_all, -1))
    pos = {g: i for i, g in enumerate(local)}
    bridged = frozenset((pos[a], pos[b]) for a, b, _ in fab.nvlink_pairs if a in pos and b in pos)
    return PciLayout(gpus=tuple(place), p2p=bool(fab.pcie_p2p),
                     intel=(fab.cpu_vendor or "intel") == "intel", pci_bw=float(pci_bw),
                     cpu_bw=float(fab.cpu_link_gbps or pci_bw), nvlink=bridged)

"""NCCL's bandwidth accounting for a ring or chain channel over a node's PCIe tree.

NCCL's graph search (graph/search.cc) places a channel by walking every GPU-to-GPU path it
uses and subtracting the channel's speed from each link on it (followPath, search.cc
69-104 of v2.21.5-1; the same code v2.18.1-v2.30.7). What a path looks like on a PCIe box:

- Paths are typed by the links they cross (paths.cc 89-99): only PCIe links through one
  switch are PIX; a path through a CPU's root complex is PHB; one crossing a socket link
  is SYS (topo.h PATH_PIX 3, PATH_PHB 6, PATH_SYS 7).
- A GPU pair without peer-to-peer (the driver says no: paths.cc 316-332, the NVML
  p2pStatus; or the path is beyond NCCL's P2P level: p2p_level below) has its path rebuilt
  through the destination's CPU ("Divert all
  traffic through the CPU", paths.cc 568-578; addInterStep 176-191): two GPUs behind one
  switch then go up through the switch's uplink and back down it, type PHB.
- followPath charges a PHB path that crosses an x86 Intel CPU node 6/5 of the channel's
  speed on every PCI link (search.cc 70-79; topo.h 31 INTEL_P2P_OVERHEAD(bw) = bw*6/5);
  other links (the socket link) and other path types are charged the speed itself.
- Links are per direction (each node holds its own outgoing links), so a ring's hops
  a->b and b->a load different links, except a switch uplink both hops climb.
- Link bandwidths as NCCL's topology holds them: a PCI link width x speed / 80 (topo.cc
  459-460; shape.pcie_gbps_nccl, passed in: Gen3 x16 12 GB/s = PCI_BW, topo.h 19), the
  socket link its CPU-model constant (nccl_cpu_bw below, ncclTopoGetInterCpuBw), NOT the
  topology file's cpu_link_gbps: that is the physical link the simulated flows share, and
  what the collective's bytes across it take at its rate is a floor on the collective's
  time (model.CollectiveModel._tree_time, with the PCIe links and switch uplinks), as NCCL's kernels cannot beat the link.

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
from functools import cached_property

from embsim.topology.build import pcie_place

from .constants import DEFAULT_VERSION, version_key

# topo.h 31 (v2.21.5-1; 39 in v2.30.7): INTEL_P2P_OVERHEAD(bw) (bw*6/5), what followPath
# charges a PHB path through an Intel root complex on its PCI links (search.cc 70-79).
INTEL_P2P_OVERHEAD = 6.0 / 5.0

# NCCL's socket-link constants, GB/s (src/graph/topo.h; v2.26.2-1 lines 21-29, v2.30.7-1
# 26-34): BDW_QPI_BW 6 (QPI_BW before 2.26), SKL_QPI_BW 10, SRP_QPI_BW 22 and ERP_QPI_BW 40
# (both new in 2.26), AMD_BW 16 (new in 2.19), ARM_BW 6, and LOC_BW 5000, what
# ncclTopoGetInterCpuBw returns for a CPU it has no case for (AMD before 2.19).
NCCL_SOCKET_BW = {"broadwell": 6.0, "skylake": 10.0, "sapphire-rapids": 22.0,
                  "emerald-rapids": 40.0, "amd": 16.0, "arm": 6.0, "loc": 5000.0}
_CONST_NAME = {"broadwell": "BDW_QPI_BW", "skylake": "SKL_QPI_BW", "sapphire-rapids": "SRP_QPI_BW",
               "emerald-rapids": "ERP_QPI_BW", "amd": "AMD_BW", "arm": "ARM_BW", "loc": "LOC_BW"}


def nccl_cpu_class(vendor: str | None, model: str | None, version: str | None) -> str | None:
    """The constant NCCL's ncclTopoGetInterCpuBw (graph/topo.cc; 62-79 in v2.18.1-1, 70-94
    in v2.26.2-1, 60-83 in v2.30.7-1) picks for this CPU under this release; None: an Intel
    host whose generation the file does not name. The releases differ:
    - ARM: ARM_BW in every release 2.18-2.30.
    - AMD: no case before 2.19 (LOC_BW), AMD_BW from v2.19.1-1.
    - Intel before 2.26: SKL_QPI_BW for family 6 model >= 0x55 (Skylake and everything
      after it, Sapphire and Emerald Rapids included), else QPI_BW; from v2.26.2-1 ERP
      (model >= 0xCF), SRP (>= 0x8F), SKL (>= 0x55), else BDW (topo.cc 519-523).
    """
    key = version_key(version or DEFAULT_VERSION)
    if vendor == "arm":
        return "arm"
    if vendor == "amd":
        return "amd" if key >= (2, 19) else "loc"
    if model is None:
        return None
    if key < (2, 26) and model in ("sapphire-rapids", "emerald-rapids"):
        return "skylake"
    return model


def nccl_cpu_bw(fab, version: str | None) -> tuple[float, str]:
    """(GB/s, where it came from) for NCCL's view of the socket link: the file's
    nccl_cpu_link_gbps if it states one; else the constant for its CPU (nccl_cpu_class);
    else, for an Intel file naming no cpu_model (files written before cpu_model existed,
    when cpu_link_gbps carried NCCL's figure), the file's cpu_link_gbps."""
    if fab.nccl_cpu_link_gbps:
        return float(fab.nccl_cpu_link_gbps), "fabric.nccl_cpu_link_gbps"
    cls = nccl_cpu_class(fab.cpu_vendor or "intel", fab.cpu_model, version)
    if cls is not None:
        return NCCL_SOCKET_BW[cls], f"{_CONST_NAME[cls]}, topo.h"
    return float(fab.cpu_link_gbps or 0.0), "taken from fabric.cpu_link_gbps: no fabric.cpu_model"


def p2p_level(vendor: str | None, gpu_count: int, version: str | None) -> str:
    """The farthest PCIe path type NCCL lets GPUs use peer-to-peer on by default (paths.cc
    ncclTopoCheckP2p; 281-300 in v2.22.3-1, 277-282 in v2.23.4-1): through v2.22 PATH_SYS,
    but PATH_PXB (switches only, no host bridge) on Intel, ARM and Zhaoxin hosts; from v2.23
    PATH_PXB on every host but an AMD one whose node has <= 2 GPUs. Beyond it NCCL stages
    through host memory (SHM) even where the driver allows P2P."""
    vendor = vendor or "intel"
    if version_key(version or DEFAULT_VERSION) < (2, 23):
        return "SYS" if vendor == "amd" else "PXB"
    return "SYS" if vendor == "amd" and gpu_count <= 2 else "PXB"


def socket_view_note(fab, version: str | None) -> str:
    """A line for the output where NCCL's view of the socket link is used (a PCIe tree over
    several sockets) and it is not the file's physical link, or was taken from it."""
    if fab.kind == "nvswitch" or not fab.has_pcie or int(fab.cpu_sockets or 1) < 2 or not fab.cpu_link_gbps:
        return ""
    bw, src = nccl_cpu_bw(fab, version)
    phys = float(fab.cpu_link_gbps)
    if src.startswith("taken"):
        return (f"NCCL's view of the socket link ({bw:g} GB/s) {src}; name the CPU "
                f"(fabric.cpu_model) or state fabric.nccl_cpu_link_gbps to separate the two")
    if abs(bw / phys - 1.0) <= 1e-9:
        return ""
    return (f"socket link {phys:g} GB/s per direction in the file (the flows), "
            f"{bw:g} in NCCL's search ({src})")


@dataclass(frozen=True)
class PciLayout:
    """A node's GPUs as NCCL's topology sees them, in the communicator's local order."""

    gpus: tuple[tuple[int, int], ...]   # (socket, PCIe switch or -1 on a root port) per GPU
    p2p: bool                           # the driver allows peer-to-peer (NVML p2pStatus OK)
    intel: bool                         # x86 Intel host: PHB paths pay INTEL_P2P_OVERHEAD
    pci_bw: float                       # NCCL's PCI link bandwidth, GB/s (GPU and switch uplink)
    cpu_bw: float                       # NCCL's socket-to-socket link, GB/s
    nvlink: frozenset = frozenset()     # (i, j) local index pairs joined by an NVLink bridge
    level: str = "SYS"                  # NCCL's P2P level (p2p_level): PXB or SYS

    @cached_property
    def transports(self) -> frozenset[str]:
        """How the ring's hops move data: "p2p" GPU to GPU (NVLink, or PCIe peer-to-peer
        within NCCL's P2P level), "shm" staged through host memory (no P2P from the driver,
        or a PHB / SYS path beyond a PXB level)."""
        n = len(self.gpus)
        kinds = {self.hop(i, (i + 1) % n)[0] for i in range(n)}
        return frozenset("p2p" if k == "NVL" or (self.p2p and (k == "PIX" or self.level == "SYS"))
                         else "shm" for k in kinds)

    @property
    def ring_peer_to_peer(self) -> bool:
        """Every hop of the ring moves GPU to GPU, none staged through host memory."""
        return self.transports == {"p2p"}

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

    @cached_property
    def _bottleneck(self) -> tuple[float, float]:
        """(ring, chain): the channel bandwidth the busiest link allows, min(capacity / load)
        over the directed links (inf without PCIe links), computed once per layout."""
        def least(chain: bool) -> float:
            return min((self.capacity(k) / w for k, w in self.loads(chain).items()), default=math.inf)
        return least(False), least(True)

    def channels_at(self, speed: float, chain: bool = False) -> int:
        """Identical channels that fit at `speed` GB/s each (NCCL's SUB_ROUND keeps 1e-3):
        floor(capacity / (load x speed)) on the busiest link, the least over all links."""
        bw = self._bottleneck[1 if chain else 0]
        return 1 << 30 if math.isinf(bw) else int(math.floor(bw / speed + 1e-6))


def layout_of(fab, gpu_count: int, local: list[int], pci_bw: float,
              version: str | None = None) -> PciLayout | None:
    """The PciLayout of a node's communicator GPUs `local` (sorted local indices of the
    busiest node; None: no PCIe tree, or NVSwitch); `gpu_count`: the node's GPUs; `pci_bw`:
    NCCL's PCI link bandwidth (shape.pcie_gbps_nccl); `version`: the NCCL release whose
    socket-link constant applies (nccl_cpu_bw)."""
    if fab.kind == "nvswitch" or not fab.has_pcie:
        return None
    place = [pcie_place(fab, gpu_count, g) for g in local]
    pos = {g: i for i, g in enumerate(local)}
    bridged = frozenset((pos[a], pos[b]) for a, b, _ in fab.nvlink_pairs if a in pos and b in pos)
    return PciLayout(gpus=tuple(place), p2p=bool(fab.pcie_p2p),
                     intel=(fab.cpu_vendor or "intel") == "intel", pci_bw=float(pci_bw),
                     cpu_bw=nccl_cpu_bw(fab, version)[0] or float(pci_bw), nvlink=bridged,
                     level=p2p_level(fab.cpu_vendor, gpu_count, version))

"""CommShape: everything NCCL's tuner sees of a communicator, as one frozen value.

The cost model (nccl_model.py, channels.py, p2p.py) depends only on this, not on the
topology layer, so it can be tested and reasoned about on its own. `comm_shape` builds
it from a Topology and a rank list the way NCCL's topology detection would.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from embsim.errors import InputError
from embsim.topology.build import pcie_place
from embsim.topology.vroutes import NetIds

from .constants import NCCL_MAX_NVLS_ARITY, NcclConstants, constants_for, nvlink_per_link
from .nvlink_rings import ring_units
from .pci_rings import PciLayout, layout_of

INTRA_KINDS = ("nvswitch", "nvlink", "pcie")


@dataclass(frozen=True)
class CommShape:
    arch: int                 # compute capability x10
    n_ranks: int
    n_nodes: int
    ppn: int                  # ranks per node (NCCL requires it uniform for its model)
    intra: str                # "nvswitch" | "nvlink" (direct mesh/bridge) | "pcie"
    nvlink_bw: float          # NCCL's per-GPU NVLink bw = links x per-link constant, GB/s
    pcie_bw: float            # NCCL's PCIe bw (width x speed/80), GB/s
    nic_bw: float             # per NIC, Gb/s / 8, GB/s (0 without NICs)
    nics_per_node: int
    cpu_vendor: str = "intel"
    nic_latency_us: float = 0.0   # what NCCL's tuner adds per inter-node hop (plugin-reported)
    net_hop_us: float = 0.0       # what an inter-node hop costs beyond NCCL's hwLat[NET] (the file)
    collnet: bool = False         # CollNet (IB SHARP) available: NVLS may span nodes
    # Switch tiers a SHARP aggregation tree over the communicator's nodes spans (1: one leaf
    # holds them, 2: leaf-spine, 3: leaf-spine-core) and the file's per-switch latency
    # (network.switch_latency_us): the kernel's CollNet round trip (collnet.py); 0 on one node.
    sharp_tiers: int = 0
    switch_latency_us: float = 0.0
    # The topology file's fabric bandwidth over the one NCCL's constants stand for (its
    # per-link constant is an achieved rate for the *spec* link of that arch): 1 when the
    # file describes the hardware NCCL knows; else NCCL still chooses on its own view
    # (it reads no link speeds, only arch and link counts) but the data moves at the file's.
    fabric_ratio: float = 1.0
    sm_clock_mhz: float = 0.0     # the GPU's boost clock (file's gpu.clock_mhz); 0: not given
    # PCIe without peer-to-peer (fabric pcie_p2p: false): NCCL's SHM transport stages every
    # byte through host memory, up the sender's PCIe path to the root complex and down to
    # the receiver's, so the communicator's GPUs behind one switch share its uplink. This
    # is the most of them behind one switch (1: P2P on, or every GPU on its own root port).
    host_share: int = 1
    nic_local_gpus: int = 1       # GPUs on each NIC's closest path (topology nics.nccl_local_gpus)
    nccl_tuner: str = ""          # the net plugin's tuner (topology nics.nccl_tuner; ofi_tuner.py)
    # The node's PCIe tree as NCCL's search charges it (pci_rings.PciLayout): set when the
    # communicator's channels cross PCIe (intra "pcie"); None: the per-GPU bound only.
    pci: PciLayout | None = None
    # A Grace Hopper node (fabric.c2c_gbps): the GPU reaches its CPU and NICs over
    # NVLink-C2C, never the narrower hop (gpu_link_bw)
    c2c: bool = False

    def host_flows(self, op: str | None = None) -> int:
        """Transfers that share the busiest switch uplink when P2P is off: every rank of a
        ring sends (all_reduce, all_gather, reduce_scatter) and so does every rank of a
        point-to-point group (op None: alltoall, sendrecv); a broadcast/reduce chain has
        n-1 senders, so a switch holding all n ranks carries n-1."""
        k = self.host_share
        if k <= 1:
            return 1
        if op in ("broadcast", "reduce"):
            return max(1, min(k, self.n_ranks - 1))
        return k

    def host_staged_bw(self, bw: float, op: str | None = None) -> float:
        """`bw` as one transfer gets it: with P2P off its share of the switch uplink the
        host-staged transfers cross (host_flows); `bw` itself otherwise."""
        return bw / self.host_flows(op)

    def __post_init__(self) -> None:
        if self.intra not in INTRA_KINDS:
            raise ValueError(f"CommShape.intra must be one of {INTRA_KINDS}, got {self.intra!r}")
        if self.n_ranks < 1 or self.n_nodes < 1 or not (
                self.ppn * (self.n_nodes - 1) < self.n_ranks <= self.ppn * self.n_nodes):
            raise ValueError(f"CommShape: {self.n_ranks} ranks != {self.n_nodes} nodes x {self.ppn}")

    @property
    def intra_bw(self) -> float:
        """Per-GPU bandwidth inside a node as NCCL's search sees it."""
        return self.nvlink_bw if self.intra != "pcie" else self.pcie_bw

    @property
    def nvls_capable(self) -> bool:
        """NVLink SHARP hardware: an NVSwitch node of Hopper or newer with 2+ GPUs of the
        communicator (a release may ask for more: NcclConstants.nvls_min_gpus)."""
        return self.intra == "nvswitch" and self.arch >= 90 and self.ppn >= 2

    @property
    def nvls_heads(self) -> int:
        """NVLS heads per node: one per local GPU (search.cc: maxChannels = min(ARITY, nGPUs))."""
        return min(NCCL_MAX_NVLS_ARITY, self.ppn)

    @property
    def intra_hw(self) -> str:
        return "NVLINK" if self.intra != "pcie" else "PCI"

    @property
    def kernel_scale(self) -> float:
        """Factor on NCCL's Ring (and chain) bandwidth for the time the file's links give."""
        return self.kernel_scale_for("Ring")

    def kernel_scale_for(self, algo: str = "Ring") -> float:
        """Factor on NCCL's bandwidth of `algo` for the time the file's links give.

        One node: the fabric ratio. Several nodes: the slower of the fabric and the NICs
        bounds the algorithm, and only the fabric side moves with the file. The two are
        compared as the algorithm loads them (channels.py _fit_ring, multinode.py): every
        ring channel crosses each GPU's fabric link once and each node's NICs once, so a
        ring's bus bandwidth is held to min(the GPU's fabric link, the node's NICs together)
        -- not to one GPU's share of the NICs, which would leave a slow fabric hidden behind
        NICs it never saturates (dgx-h100 2x8 at 45 GB/s NVLink came out faster than 1x8).
        A tree (non-Simple protocols; Tree/Simple has its own bound, tree_kernel_bw) sends
        each byte up and down its chain and reaches the network through the heads' NICs
        (nic_tree_bw). One GPU per node on NVLink/NVSwitch: no fabric hop, factor 1; on PCIe
        the GPU's own PCIe link still carries every byte to the NIC.
        """
        r = self.fabric_ratio
        if r == 1.0:
            return 1.0
        if self.n_nodes == 1 or self.nic_bw <= 0:
            return r
        if self.ppn <= 1 and self.intra != "pcie":
            return 1.0
        fabric = self.intra_bw
        # On a PCIe node the file's PCIe rate is also the GPU's hop to its NIC
        pcie = r if self.intra == "pcie" else 1.0
        heads = None if algo != "Tree" else min(max(1, self.nics_per_node), self.nvls_heads)
        nics, file_nics = self.node_nics_bw(heads), self.node_nics_bw(heads, pcie)
        if algo == "Tree":
            fabric /= 2.0
            if self.n_nodes > 2:
                nics, file_nics = nics / 2.0, file_nics / 2.0
        base = min(fabric, nics)
        return min(fabric * r, file_nics) / base if base > 0 else r

    @property
    def gpu_link_bw(self) -> float:
        """The GPU's own hop toward its NICs as NCCL reads it (its PCIe, pcie_bw), through
        which a lone GPU of a node feeds every NIC it uses; 0 (no bound) over NVLink-C2C."""
        return 0.0 if self.c2c else self.pcie_bw

    @property
    def nic_path_bw(self) -> float:
        """GPU -> NIC path bandwidth: the slower of the PCIe hop and the NIC itself. On a
        Grace Hopper node (fabric.c2c_gbps) the GPU's own hop is NVLink-C2C, which NCCL reads
        as links x NVML rate (~450 GB/s), never the narrower: the PCIe hop left is the NIC's."""
        return self.nic_path_at()

    def nic_path_at(self, pcie_scale: float = 1.0) -> float:
        """nic_path_bw with the PCIe hop at `pcie_scale` x NCCL's view of it (the file's
        rate over the spec's on a PCIe node, for the time the hardware takes)."""
        if self.nic_bw <= 0:
            return 0.0
        return min(self.nic_bw, self.pcie_bw * pcie_scale) if self.pcie_bw > 0 else self.nic_bw

    def node_nics_bw(self, nics: int | None = None, pcie_scale: float = 1.0) -> float:
        """GB/s `nics` of a node's NICs (default: all it uses) give the communicator together.
        With one GPU a node every byte to any of them crosses that GPU's own link first
        (followPath charges the GPU->NIC path from the GPU's PCIe link on), so several NICs
        never move more than that link: a lone H100 behind 8 NICs stays near its Gen5 x16."""
        k = max(1, self.nics_per_node if nics is None else nics)
        path = self.nic_path_at(pcie_scale)
        bw = path * k
        if self.ppn <= 1 and self.gpu_link_bw > 0:
            bw = min(bw, self.gpu_link_bw * pcie_scale)     # path is at most that link
        return bw


# Spec per-direction rates NCCL's constants stand for. NVLink per link: NVLink 1 (P100) 20,
# NVLink 2/3/4 (V100, A100, H100; also Turing bridges) 25, NVLink 5 (B200) 50 GB/s
# (hardware.md §4.1: 6 x 25 = 150, 12 x 25 = 300, 18 x 25 = 450, 18 x 50 = 900; Turing
# bridge 2 x 25); GA102 (sm86) 4 links give 112.5 GB/s both ways (NVIDIA GA102
# whitepaper), 14.0625 per link per direction. PCIe per lane: 8 GT/s 128b/130b = 0.985,
# doubling per generation (x16: Gen4 ~31.5, Gen5 ~63, Gen6 ~121; hardware.md §4.1).
SPEC_NVLINK_PER_LINK = {60: 20.0, 70: 25.0, 75: 25.0, 80: 25.0, 86: 14.0625, 89: 25.0, 90: 25.0, 100: 50.0}
SPEC_PCIE_PER_LANE = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}
AGREE = 0.03      # a file within 3 % of the spec rate describes the hardware NCCL knows


def spec_nvlink_per_link(arch: int) -> float:
    if arch in SPEC_NVLINK_PER_LINK:
        return SPEC_NVLINK_PER_LINK[arch]
    fam = 100 if arch >= 100 else 90 if arch >= 90 else 80 if arch >= 80 else 70 if arch >= 70 else 60
    return SPEC_NVLINK_PER_LINK[fam]


def fabric_ratio(fab, arch: int, path: str | None = None) -> tuple[float, str]:
    """(file / spec, note) for the intra-node fabric NCCL's view is built from: the node's
    NVLink, or its PCIe where `path` is "pcie" -- a PCIe node, or GPUs of an NVLink-bridged
    or meshed node that NVLink does not connect, whose rings cross PCIe (None: the fabric's
    own kind)."""
    if fab.kind in ("nvswitch", "nvlink-mesh", "nvlink-bridge") and path != "pcie":
        links, gbps = fab.nvlink_links_per_gpu, fab.nvlink_gbps
        if not links or not gbps:
            return 1.0, ""
        spec = links * spec_nvlink_per_link(arch)
        what = f"NVLink {gbps:g} GB/s per GPU where {links} sm{arch} links are {spec:g}"
    elif fab.kind == "pcie" or path == "pcie":
        if not fab.pcie_gen or not fab.pcie_lanes or not fab.pcie_gbps:
            return 1.0, ""
        spec = fab.pcie_lanes * SPEC_PCIE_PER_LANE.get(int(fab.pcie_gen), 0.985)
        gbps = fab.pcie_gbps
        what = f"PCIe {gbps:g} GB/s where Gen{fab.pcie_gen} x{fab.pcie_lanes} is {spec:.1f}"
    else:
        return 1.0, ""
    r = float(gbps) / spec
    if abs(r - 1.0) <= AGREE:
        return 1.0, ""
    return r, (f"topology file disagrees with NCCL's view: {what}; NCCL's algorithm choice "
               f"uses its own constants, collective times use the file (x{r:.3g})")


def pcie_gbps_nccl(gen: int | None, lanes: int | None) -> float:
    """NCCL's PCIe model (topo.cc 545-557): width x speed/80, speed in 100 Mb/s per lane.

    Gen3 8 GT/s -> 60, Gen4 -> 120, Gen5 -> 240, Gen6 -> 480 (x16: 12, 24, 48, 96 GB/s).
    """
    if not gen or not lanes:
        return 12.0  # PCI_BW default (topo.h), Gen3 x16
    speed = {1: 15, 2: 30, 3: 60, 4: 120, 5: 240, 6: 480}.get(int(gen), 60)
    return lanes * speed / 80.0


def _nvlink_connected(gpus: set[int], pairs) -> bool:
    """True when `gpus` lie in one component of the NVLink graph (pairs: (a, b, links))."""
    if len(gpus) <= 1:
        return True
    parent = {}

    def find(x):
        while parent.get(x, x) != x:
            x = parent[x]
        return x
    for a, b, _ in pairs:
        parent[find(a)] = find(b)
    return len({find(g) for g in gpus}) == 1


def _nccl_nics(topology, local_by_node: dict[int, list[int]]) -> int:
    """NICs NCCL's graph search can use for this communicator: those next to its GPUs.

    The search keeps the closest GPU-NIC path type it finds (search.cc ncclTopoCompute:
    typeInter is relaxed only while no solution exists), so each GPU drives its own
    NIC(s); a NIC next to a GPU outside the communicator is reached only via PXN, which
    needs that GPU's rank as the proxy. So 1 of a DGX H100's 8 NICs serves a 1-GPU-per-node
    communicator (10 x 1 H100 all_reduce 48.9 GB/s busbw, 10 x 2 98, 10 x 4 196:
    xxrjun/nccl-tests-cluster multi-node logs). Without a NIC-GPU map every NIC counts;
    several nodes: the one with fewest such NICs sets the rings.
    """
    node = topology.node
    if not node.nics.gpus:
        return int(node.nics.count)
    return min(sum(1 for gpus in node.nics.gpus if any(g in local for g in gpus))
               for local in map(set, local_by_node.values()))


def _tiers_spanned(topology, local_by_node: dict[int, list[int]]) -> int:
    """Switch tiers the communicator's nodes span: 1 when one leaf (per rail) holds them all,
    2 within one pod of a three-tier fabric (or any two-tier one), 3 across pods."""
    net = NetIds.of(topology)
    nodes = np.fromiter(local_by_node, dtype=np.int64)
    leaves = net.leaf(nodes, 0)
    if len(set(leaves.tolist())) <= 1:
        return 1
    if net.tiers < 3 or len(set(net.pod(leaves).tolist())) <= 1:
        return 2
    return 3


def comm_shape(topology, ranks: Sequence[int], nccl_version: str | NcclConstants | None = None) -> CommShape:
    """The CommShape NCCL would derive for communicator `ranks` on `topology`."""
    consts = nccl_version if isinstance(nccl_version, NcclConstants) else constants_for(nccl_version)
    ranks = list(ranks)
    if not ranks:
        raise InputError("communicator has no ranks")
    if len(set(ranks)) != len(ranks):
        raise InputError("communicator lists a rank twice")
    gpn = topology.gpus_per_node
    local_by_node: dict[int, list[int]] = {}      # node -> the communicator's GPUs on it
    for r in ranks:
        local_by_node.setdefault(topology.node_of(r), []).append(r % gpn)
    n_nodes = len(local_by_node)
    # Uneven groups: the busiest node sets the intra-node step count.
    busiest = sorted(max(local_by_node.values(), key=len))
    ppn = len(busiest)
    node = topology.node
    fab = node.fabric
    kind = fab.kind
    if kind == "nvswitch":
        intra = "nvswitch"
    elif kind in ("nvlink-mesh", "nvlink-bridge"):
        # NVLink rings only exist when the node's ranks are NVLink-connected (a bridged
        # pair, a cube-mesh); otherwise NCCL's channels cross PCIe / host memory.
        local = {g for gpus in local_by_node.values() for g in gpus}
        intra = "nvlink" if _nvlink_connected(local, fab.nvlink_pairs) else "pcie"
    else:
        intra = "pcie"
    links = fab.nvlink_links_per_gpu or 0
    if intra == "nvlink" and fab.nvlink_pairs and ppn > 1:
        # a mesh carries the rings its pairs' links close, not a GPU's link count
        links = min(links, *(ring_units(tuple(sorted(gpus)), fab.nvlink_pairs)
                             for gpus in local_by_node.values() if len(gpus) > 1))
    nvlink_bw = (links * nvlink_per_link(consts, node.gpu.arch) * fab.nvlink_whatif_scale
                 if intra != "pcie" else 0.0)   # scaled for an NVLink what-if
    pcie_bw = pcie_gbps_nccl(fab.pcie_gen, fab.pcie_lanes) if (fab.pcie_gen or fab.pcie_lanes) else (
        float(fab.pcie_gbps) if fab.pcie_gbps else 12.0)
    nics = _nccl_nics(topology, local_by_node) if n_nodes > 1 or node.nics.count else 0
    n_ranks = len(ranks)
    ratio = fabric_ratio(fab, int(node.gpu.arch), intra if intra == "pcie" else None)[0]
    host_share = 1
    if kind == "pcie" and not fab.pcie_p2p and fab.pcie_switches:
        host_share = max(Counter(pcie_place(fab, node.gpu.count, g)[1] for g in gpus).most_common(1)[0][1]
                         for gpus in local_by_node.values())
    return CommShape(
        arch=int(node.gpu.arch), n_ranks=n_ranks, n_nodes=n_nodes, ppn=ppn, intra=intra,
        nvlink_bw=float(nvlink_bw), pcie_bw=float(pcie_bw),
        # NCCL's view of the NICs: a plugin may present several as one device
        nic_bw=float(node.nics.gbit) * node.nics.nccl_group / 8.0 if nics else 0.0,
        nics_per_node=int(nics) // node.nics.nccl_group,
        # NCCL's tuner sees the plugin's reported latency (net_ib getProperties: 0, "Not
        # set"); the kernel's inter-node hop pays the file's adapter and leaf-switch latency
        # on top of NCCL's per-hop hwLat[NET] (multinode.net_hop_us).
        cpu_vendor=(fab.cpu_vendor or "intel"),
        nic_latency_us=float(node.nics.nccl_latency_us) if n_nodes > 1 else 0.0,
        net_hop_us=(float(node.nics.latency_us) + float(node.network.switch_latency_us)) if n_nodes > 1 else 0.0,
        collnet=bool(node.network.sharp) and n_nodes > 1,
        sharp_tiers=_tiers_spanned(topology, local_by_node) if n_nodes > 1 else 0,
        switch_latency_us=float(node.network.switch_latency_us) if n_nodes > 1 else 0.0,
        sm_clock_mhz=float(node.gpu.clock_mhz or 0.0), host_share=host_share,
        nic_local_gpus=int(node.nics.nccl_local_gpus),
        nccl_tuner=node.nics.nccl_tuner if n_nodes > 1 else "",
        c2c=bool(fab.c2c_gbps),
        pci=layout_of(fab, node.gpu.count, busiest, float(pcie_bw), consts.version)
        if intra == "pcie" and ppn > 1 else None,
        fabric_ratio=ratio / fab.nvlink_whatif_scale if intra != "pcie" else ratio)


def node_transports(topology, nccl_version: str | NcclConstants | None = None) -> frozenset[str]:
    """How a ring over a whole node of `topology` moves data between its GPUs under NCCL's
    defaults: {"p2p"} over NVLink / NVSwitch, PciLayout.transports across PCIe ("p2p",
    "shm" or both), nothing with one GPU a node."""
    gpn = topology.gpus_per_node
    if gpn < 2:
        return frozenset()
    pci = comm_shape(topology, range(gpn), nccl_version).pci
    return frozenset({"p2p"}) if pci is None else pci.transports

"""How NCCL's topology detection sees a node's links (reference/nccl-cost-model.md §1.7).

NCCL does not use datasheet bandwidths: it assigns per-link constants by GPU arch,
PCIe width x speed, NIC speed / 8000 and CPU type. The collective cost model needs
those numbers (its graph search picks channel speeds against them), the simulated
links use the hardware figures from the YAML. Values here are bytes/s.
"""

from __future__ import annotations

from dataclasses import dataclass

from .spec import NodeType

# src/graph/topo.h 17-35 (NCCL 2.30.7), GB/s per NVLink link, by compute capability.
NCCL_NVLINK_PER_LINK_GBPS = {60: 18.0, 70: 20.0, 80: 20.0, 86: 12.0, 90: 20.6, 100: 40.1}
# NCCL's PCIe speed per lane in units of 100 Mb/s (topo.cc 545-557): 2.5 GT/s -> 15 ... 64 GT/s -> 480.
_PCIE_SPEED_PER_LANE = {1: 15, 2: 30, 3: 60, 4: 120, 5: 240, 6: 480}
NCCL_NET_DEFAULT_GBPS = 12.0   # `NET_BW` default ("100Gbit"), topo.h


def _nvlink_per_link(arch: int) -> float:
    # NCCL falls back to the nearest lower known architecture.
    known = [a for a in sorted(NCCL_NVLINK_PER_LINK_GBPS) if a <= arch]
    return NCCL_NVLINK_PER_LINK_GBPS[known[-1]] if known else NCCL_NVLINK_PER_LINK_GBPS[60]


@dataclass(frozen=True)
class NcclBandwidths:
    nvlink_per_link: float | None    # one NVLink link
    nvlink_per_gpu: float | None     # links_per_gpu x per-link (what NCCL calls NVL[...] to the NVSwitch)
    pcie: float | None               # width x speed / 80
    cpu: float | None                # socket link (the YAML value, which presets take from NCCL's table)
    nic: float | None                # gbit * 1000 / 8000


def nccl_bandwidths(node: NodeType) -> NcclBandwidths:
    fab = node.fabric
    per_link = per_gpu = pcie = cpu = nic = None
    if fab.has_nvlink:
        per_link = _nvlink_per_link(node.gpu.arch) * 1e9 * fab.nvlink_whatif_scale
        per_gpu = per_link * fab.nvlink_links_per_gpu
    if fab.has_pcie:
        pcie = fab.pcie_lanes * _PCIE_SPEED_PER_LANE[fab.pcie_gen] / 80 * 1e9
        if fab.cpu_link_gbps is not None:
            cpu = fab.cpu_link_gbps * 1e9
    if node.nics.count:
        nic = node.nics.gbit * 1000 / 8000 * 1e9
    return NcclBandwidths(per_link, per_gpu, pcie, cpu, nic)


def nccl_path_type(topo, src: int, dst: int) -> str:
    """NCCL's path class between two GPU ranks: NVL, PIX, PXB, PHB, SYS or NET."""
    if topo.node_of(src) != topo.node_of(dst):
        return "NET"
    kinds = [topo.links[i].kind for i in topo.route(src, dst)]
    if kinds and all(k == "nvlink" for k in kinds):
        return "NVL"
    if "cpu" in kinds:
        return "SYS"
    if "host" in kinds:
        return "PHB"
    vertices = [topo.links[i].dst for i in topo.route(src, dst)][:-1]
    types = [topo.graph.nodes[v]["type"] for v in vertices]
    if "cpu" in types:
        return "PHB"
    return "PIX" if len(types) == 1 else "PXB"

"""NCCL's path classes between GPUs and from a GPU to a NIC (docs/sources/nccl-cost-model.md
§1.7). NCCL's view of link bandwidths (per-link constants by arch, PCIe width x speed, NIC
speed / 8000) lives with the cost model that uses it: embsim.collectives.shape."""

from __future__ import annotations

from .build import tree_path

# NCCL's path types in order, best first (topo.h PATH_LOC .. PATH_DIS; recent releases put
# C2C after NVB and P2C, a GPU -> C2C -> CPU -> PCIe -> NIC path, between PXB and PXN).
PATH_ORDER = ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET")


def nccl_path_type(topo, src: int, dst: int) -> str:
    """NCCL's path class between two GPU ranks: NVL, C2C, PIX, PXB, PHB, SYS or NET."""
    if topo.node_of(src) != topo.node_of(dst):
        return "NET"
    kinds = [topo.links[i].kind for i in topo.route(src, dst)]
    if kinds and all(k == "nvlink" for k in kinds):
        return "NVL"
    if "cpu" in kinds:
        return "SYS"
    if "host" in kinds:
        return "PHB"
    if kinds and all(k == "c2c" for k in kinds):
        # two GPUs on one CPU's C2C links: only a LINK_PCI next to a CPU makes PHB (paths.cc)
        return "C2C"
    vertices = [topo.links[i].dst for i in topo.route(src, dst)][:-1]
    types = [topo.graph.nodes[v]["type"] for v in vertices]
    if "cpu" in types:
        return "PHB"
    return "PIX" if len(types) == 1 else "PXB"


def nccl_nic_path_type(template, gpu: int, nic: int) -> str:
    """NCCL's path class from local GPU `gpu` to NIC `nic` of a node template (build.NodeTemplate)
    as ncclTopoComputePaths sets it: the worst link type on the way (paths.cc ncclTopoSetPaths:
    a PCIe link next to a CPU is PHB, switch to switch PXB, a socket link SYS), then a GPU that
    reaches its own CPU over C2C and a NIC on that CPU's PCIe is P2C instead of PHB (mergePathType,
    the "C2C + PHB" update), the class GPUDirect RDMA and PXN accept by default (NET_GDR_C2C,
    PXN_C2C = 1). Without a PCIe/host tree (NVLink only) or NIC: None."""
    u, v = f"gpu{gpu}", f"nic{nic}"
    if u not in template.parent or v not in template.parent:
        return None
    verts = tree_path(template, u, v)
    vtype = template.vertices
    worst, over_c2c = 0, False
    for a, b in zip(verts, verts[1:]):
        kind = template.links[template.offset[(a, b)]][2]
        if kind == "c2c":
            t = "C2C"
            over_c2c = over_c2c or a == u
        elif kind in ("cpu", "host"):
            t = "SYS" if kind == "cpu" else "PHB"
        elif "cpu" in (vtype[a], vtype[b]):
            t = "PHB"
        elif vtype[a] == vtype[b] == "pcie-switch":
            t = "PXB"
        else:
            t = "PIX"
        worst = max(worst, PATH_ORDER.index(t))
    path = PATH_ORDER[worst]
    return "P2C" if path == "PHB" and over_c2c else path

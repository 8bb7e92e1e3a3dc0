"""NCCL's path classes between GPUs (docs/sources/nccl-cost-model.md §1.7). NCCL's view of
link bandwidths (per-link constants by arch, PCIe width x speed, NIC speed / 8000) lives
with the cost model that uses it: embsim.collectives.shape."""

from __future__ import annotations


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

"""NCCL's own tuning model (src/graph/tuning.cc, src/enqueue.cc), as pure functions.

Given a CommShape and its search graphs, NCCL fills a table of bandwidth and latency
per (collective, algorithm, protocol) and picks the (algo, proto) with the smallest
predicted time. This module reproduces that table and that choice. Units are NCCL's:
bandwidth GB/s (1e9 B/s), latency and time µs. Reference: nccl-cost-model.md §1.2-1.6.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from embsim.errors import InputError

from embsim.nccl_names import parse_filter

from .channels import Graph, Graphs
from .constants import PROTOS, NcclConstants, arch_family
from .shape import CommShape

NCCL_OPS = ("broadcast", "reduce", "all_gather", "reduce_scatter", "all_reduce")

# tuning.cc 623-627: index 0 = 64 B ... 23 = 512 MiB.
TREE_CORRECTION = {
    "LL": (1, 1, 1, 1, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1, 1, 1, 1, 1),
    "LL128": (1, 1, 1, 1, 1, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1, 1, 1),
    "Simple": (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9),
}

def nsteps(op: str, n_ranks: int) -> int:
    if op == "all_reduce":
        return 2 * (n_ranks - 1)
    if op in ("all_gather", "reduce_scatter"):
        return n_ranks - 1
    return n_ranks


def _node_index(n_nodes: int) -> int:
    return n_nodes - 1 if n_nodes <= 2 else 2


def ll_max_bw(shape: CommShape, consts: NcclConstants) -> float:
    """llMaxBws row: GPU arch on one node; on several nodes row 0 (Intel) or row 1 (AMD)."""
    if shape.n_nodes == 1:
        row = arch_family(shape.arch)
    else:
        row = 80 if shape.cpu_vendor == "amd" else 70
    return consts.ll_max_bw[row][_node_index(shape.n_nodes)]


def net_overhead_us(shape: CommShape) -> float:
    """getNetOverhead (tuning.cc 226-233): 2 µs on AMD x86, else 1 µs."""
    return 2.0 if shape.cpu_vendor == "amd" else 1.0


def graph_for(algo: str, graphs: Graphs) -> Graph | None:
    return {"Ring": graphs.ring, "PAT": graphs.ring, "Tree": graphs.tree,
            "NVLS": graphs.nvls, "NVLSTree": graphs.nvls,
            "CollNetDirect": graphs.collnet_direct, "CollNetChain": graphs.collnet_chain}[algo]


def ll128_enabled(shape: CommShape, consts: NcclConstants) -> bool:
    """NCCL's default LL128 switch (tuning.cc, `pEnable == 2 && p == NCCL_PROTO_LL128`; the
    same lines in every release 2.18-2.30): `graphs[a]->typeIntra <= PATH_NVB` -- the
    node's channels on NVLink, or one GPU per node (its graph's typeIntra is PATH_LOC) --
    and the GPU arch the release allows (NcclConstants.ll128_archs). Not modelled: the
    network path rule (`typeInter <= PATH_PXB`, or PATH_PXN on sm90+) and CUDA 11.8's
    2-rank sm90 Ring exception."""
    if shape.intra == "pcie" and shape.ppn > 1:
        return False
    if consts.ll128_archs is None:
        return shape.arch >= 70
    return shape.arch in consts.ll128_archs


def default_enabled(op: str, shape: CommShape, graphs: Graphs, consts: NcclConstants) -> list[tuple[str, str]]:
    """(algo, proto) pairs NCCL enables for this op by default (tuning.cc ~293-304, ~440-536)."""
    algos: list[str] = ["Ring"]
    nvls_ok = graphs.nvls is not None and graphs.nvls.n_channels >= 2
    if op == "all_reduce":
        algos.append("Tree")
        # NVLS across nodes needs CollNet (IB SHARP, `network.sharp`): without it NCCL
        # disables NVLS on several nodes and keeps NVLSTree (NVLS inside a node, a tree over
        # the NICs) -- tuning.cc "Disable ... Collnet+NVLS if collnet is not supported"
        # (v2.18.5 ~266, v2.26.2 ~414, v2.29.7 ~469).
        # CollNetChain / CollNetDirect (collnet.py) where CollNet is set up (channels.
        # search_collnet: SHARP, 2+ nodes, <= 8 GPUs a node); Direct only on NVSwitch nodes
        # (tuning.cc `nvsCount == 0`: no Direct graph). AllReduce only: CollNetDirect
        # AllGather / ReduceScatter (2.20+) need the plugin's iallgather / ireducescatter
        # and no more local ranks than heads (tuning.cc), which the topology file does not
        # say; NCCL runs no other collective on CollNet.
        if graphs.collnet_direct is not None:
            algos.append("CollNetDirect")
        if graphs.collnet_chain is not None:
            algos.append("CollNetChain")
        if nvls_ok:
            if shape.n_nodes == 1 or shape.collnet:
                algos.append("NVLS")
            if shape.n_nodes > 1:
                algos.append("NVLSTree")
    elif op in ("all_gather", "reduce_scatter"):
        if consts.has_pat and shape.n_nodes == shape.n_ranks and shape.n_ranks > 1 and shape.arch >= 60:
            algos.append("PAT")
        if consts.nvls_allgather_rs and nvls_ok and shape.n_nodes == 1:
            algos.append("NVLS")
    ll128 = ll128_enabled(shape, consts)
    out = []
    for a in algos:
        for p in PROTOS:
            if a in ("NVLS", "NVLSTree", "PAT", "CollNetDirect", "CollNetChain") and p != "Simple":
                continue
            if p == "LL128" and not ll128:
                continue
            out.append((a, p))
    return out


def bandwidth(op: str, algo: str, proto: str, shape: CommShape, graphs: Graphs,
              consts: NcclConstants) -> float:
    """comm->bandwidths[coll][algo][proto]: algorithm bandwidth in GB/s (0 = unavailable)."""
    g = graph_for(algo, graphs)
    if g is None:
        return 0.0
    if algo in COLLNET:
        return collnet_bandwidth(op, algo, proto, shape, g)
    n, nn, ppn = shape.n_ranks, shape.n_nodes, shape.ppn
    fam = arch_family(shape.arch)
    idx = _node_index(nn)
    steps = nsteps(op, n)
    bw = g.bw_intra if nn <= 2 else g.bw_inter
    if algo in ("NVLS", "NVLSTree"):
        if g.n_channels < 2:
            return 0.0
        if consts.nvls_efficiency is not None:
            intra = g.bw_intra * consts.nvls_efficiency[fam] * (g.n_channels - 1) / g.n_channels
            intra *= 2 if op == "all_reduce" else (ppn - 1) / ppn
            inter = g.bw_inter * (2 if (algo == "NVLSTree" and nn <= 2) else 1)
            cap = consts.per_ch_nvlstree[fam][idx] if algo == "NVLSTree" else math.inf
            bw = min(intra, inter if nn > 1 else math.inf, cap)
        elif algo == "NVLS":
            bw = min(g.bw_intra, g.bw_inter)
        else:
            bw = min(g.bw_intra, g.bw_inter if nn <= 2 else g.bw_inter / 2)
    bus = g.n_channels * bw
    if algo == "Ring" and proto == "LL":
        if consts.ring_ll_factor_old:
            factor = 0.25 if (op in ("all_reduce", "reduce") or nn > 1) else 1.0 / 3.0
        else:
            factor = 0.5
        bus = min(ll_max_bw(shape, consts), bus * factor)
    elif algo == "Ring" and proto == "LL128":
        factor = consts.ring_ll128_ppn1_factor if ppn < 2 else 0.92
        bus = min(bus * factor, g.n_channels * consts.per_ch_ring_ll128[fam][idx])
    elif algo == "Tree":
        # every protocol first takes Tree's x0.92 and perChMaxTreeBw cap (tuning.cc: the
        # `a == NCCL_ALGO_TREE` line has no protocol test), then LL / LL128 their own
        if op == "all_reduce" or not consts.tree_092_allreduce_only:
            bus = min(bus * 0.92, g.n_channels * consts.per_ch_tree[fam][idx])
        if proto == "LL":
            bus = min(bus / 3.8, ll_max_bw(shape, consts))
        elif proto == "LL128":
            bus = min(bus * (7.0 / 9.0 if nn == 1 else 120.0 / 128.0),
                      g.n_channels * consts.per_ch_tree_ll128[fam][idx])
        # Plain (unbalanced) tree pattern when a node has a single NIC [our reading of
        # search.cc: BALANCED_TREE needs two NICs to split up/down traffic].
        if nn > 1 and shape.nics_per_node < 2:
            bus *= 0.85
    elif algo == "PAT":
        bus *= consts.pat_factor
    if op in ("all_gather", "reduce_scatter") and algo not in ("Ring",):
        return bus                      # already per-rank for non-ring AG/RS
    if algo == "Ring":
        ratio = n / steps
    elif algo in ("NVLS", "NVLSTree"):
        if consts.nvls_efficiency is not None:
            ratio = n / steps
        elif algo == "NVLS" or not consts.nvlstree_ratio_old:
            ratio = 5.0 / 6.0
        else:
            ratio = 0.70 * nn / (2 * (nn - 1))
    else:
        ratio = 0.5
    return bus * ratio


COLLNET = ("CollNetDirect", "CollNetChain")


def collnet_bandwidth(op: str, algo: str, proto: str, shape: CommShape, g: Graph) -> float:
    """comm->bandwidths of CollNetDirect / CollNetChain AllReduce, GB/s (tuning.cc, the same
    in every release 2.18-2.30): busBw = nChannels x bwIntra (CollNet reads bwIntra on any
    node count); Direct divides by the GPU/NIC ratio's factor (ppn / nChannels, halfway to
    1: "Collnet+Direct requires all GPUs to have a local NIC to work at full speed") and
    takes x0.85 on sm90+; algBw = busBw x 0.5. Simple only ("Not used" otherwise). Chain has
    no factor of its own in any release."""
    if op != "all_reduce" or proto != "Simple":
        return 0.0
    bus = g.n_channels * g.bw_intra
    if algo == "CollNetDirect":
        factor = shape.ppn / g.n_channels
        factor -= (factor - 1) / 2
        bus /= factor
        if shape.arch >= 90:
            bus *= 0.85
    return bus * 0.5


def collnet_latency(algo: str, shape: CommShape, consts: NcclConstants) -> float:
    """comm->latencies of CollNet AllReduce, µs (tuning.cc): base 0, then Direct
    2 (min(1, ppn-1) intraLat + (ppn-1) x arity) + interLat, Chain 2 (ppn-1) intraLat +
    interLat; interLat = hwLat[NET] + the NIC's latency, twice for Simple ("flush extra
    latency"); at 1 GPU per node 2.23+ prices the hop at Tree's hwLat[NET]."""
    k = COLLNET.index(algo)
    ppn = shape.ppn
    intra = consts.collnet_hw_lat[shape.intra_hw][k]
    exposed = ppn == 1 and consts.ppn1_tree_net_latency
    inter = (consts.hw_lat["NET"]["Tree"][2] if exposed else consts.collnet_hw_lat["NET"][k])
    inter += 2 * shape.nic_latency_us
    if algo == "CollNetDirect":
        return 2 * (min(1, ppn - 1) * intra + (ppn - 1) * consts.collnet_arity_us) + inter
    return 2 * (ppn - 1) * intra + inter


def latency(op: str, algo: str, proto: str, shape: CommShape, graphs: Graphs,
            consts: NcclConstants) -> float:
    """comm->latencies[coll][algo][proto], µs."""
    if algo in COLLNET:
        return collnet_latency(algo, shape, consts)
    pi = PROTOS.index(proto)
    n, nn, ppn = shape.n_ranks, shape.n_nodes, shape.ppn
    steps = nsteps(op, n)
    lat = consts.base_lat[algo][pi]
    intra = consts.hw_lat[shape.intra_hw][algo][pi]
    lat_inter = shape.nic_latency_us
    exposed = ppn == 1 and consts.ppn1_tree_net_latency   # 2.23+: Tree's NET hop at 1 GPU/node
    inter = (consts.hw_lat["NET"]["Tree"][pi] if exposed else consts.hw_lat["NET"][algo][pi]) + lat_inter
    if proto == "Simple":
        inter += lat_inter              # "flush extra latency"
    log2n = int(math.log2(nn)) if nn > 1 else 0
    if algo == "Ring":
        if op in ("all_reduce", "all_gather", "reduce_scatter"):
            overhead = net_overhead_us(shape) * (3 if proto == "Simple" else 1) if nn > 1 else 0.0
            intra = max(intra, overhead)
            if nn == 1:
                n_inter = 0
            elif op == "all_reduce":
                n_inter = 2 * nn if consts.ring_allreduce_inter_steps_2n else 2 * (nn - 1)
            else:
                n_inter = nn - 1
            lat += (steps - n_inter) * intra + n_inter * inter
        else:
            # Broadcast/Reduce chain; sameChannels is false for our graphs, so every step
            # pays a hop, with the Tree/Simple latency for Simple (tuning.cc ~400).
            hw = shape.intra_hw if nn == 1 else "NET"
            per = consts.hw_lat[hw]["Tree" if proto == "Simple" else "Ring"][pi]
            lat += steps * per
    elif algo == "Tree":
        lat += 2 * ((ppn - 1) * intra + log2n * inter)
    elif consts.nvls_lat_old and algo == "NVLS":
        lat += consts.hw_lat["NET"][algo][pi] if nn > 1 else 0.0
    elif consts.nvls_lat_old and algo == "NVLSTree":
        lat += 2 * (nn - 1) * consts.hw_lat["NET"][algo][pi]
    elif algo == "NVLS":
        lat = intra + (inter if nn > 1 else 0.0)
    elif algo == "NVLSTree":
        lat += intra + 2 * log2n * inter
    elif algo == "PAT":
        lat += log2n * (inter / 3.5) + n * 2.8
    return lat


@dataclass(frozen=True)
class AlgoTime:
    algo: str
    proto: str
    bandwidth: float      # GB/s after size corrections
    latency: float        # µs after size corrections
    time: float           # µs


def algo_time(op: str, algo: str, proto: str, nbytes: float, shape: CommShape, graphs: Graphs,
              consts: NcclConstants) -> AlgoTime | None:
    """ncclTopoGetAlgoTime (tuning.cc 630-655); None when the pair is unavailable."""
    bw = bandwidth(op, algo, proto, shape, graphs, consts)
    if bw <= 0:
        return None
    lat = latency(op, algo, proto, shape, graphs, consts)
    nb = int(nbytes)
    log_size = int(math.log2(nb >> 6)) if (nb >> 6) > 0 else -1
    if algo == "Tree" and op == "all_reduce" and 0 <= log_size < 23:
        bw *= TREE_CORRECTION[proto][log_size]
    if (algo == "NVLSTree" and op == "all_reduce" and 0 <= log_size < 24 and shape.arch >= 100
            and consts.nvlstree_tree_correction and shape.cpu_vendor in ("intel", "amd")):
        bw *= TREE_CORRECTION[proto][log_size]
    if (algo == "Ring" and proto == "Simple" and shape.n_nodes > 1 and op == "all_reduce"
            and nb / (graphs.comm_channels * shape.n_ranks) >= 64):
        lat *= consts.ring_plateau_sm80 if shape.arch >= 80 else consts.ring_plateau_volta
    return AlgoTime(algo, proto, bw, lat, lat + nb / (1000.0 * bw))


def candidates(op: str, shape: CommShape, graphs: Graphs, consts: NcclConstants,
               algos: frozenset[str] | None = None, protos: frozenset[str] | None = None,
               said: str = ""):
    """Enabled pairs after NCCL_ALGO/NCCL_PROTO filters; none left is refused, as NCCL
    refuses it ("no algorithm/protocol available"). `said`: the filters as the run gave
    them (e.g. "--nccl-algo Tree"), for the refusal to name."""
    pairs = default_enabled(op, shape, graphs, consts)
    kept = [(a, p) for a, p in pairs if (algos is None or a in algos) and (protos is None or p in protos)]
    if not kept:
        avail = ", ".join(f"{a}/{p}" for a, p in pairs)
        why = ""
        if algos is not None and algos <= set(COLLNET):
            why = ("; CollNet needs AllReduce on 2+ nodes of <= 8 GPUs whose network reduces in "
                   "the switch (topology network.sharp: true), CollNetDirect also NVSwitch nodes")
        raise InputError(f"{said or 'the algo/proto override'}: leaves nothing NCCL can run for "
                         f"{op} on this communicator (available: {avail}){why}")
    return kept


def select(op: str, nbytes: float, shape: CommShape, graphs: Graphs, consts: NcclConstants,
           algos: frozenset[str] | None = None, protos: frozenset[str] | None = None,
           said: str = "") -> AlgoTime:
    """topoGetAlgoInfo: argmin predicted time over the enabled (algo, proto) pairs."""
    if op not in NCCL_OPS:
        raise InputError(f"op {op!r} is not in NCCL's tuning model (known: {', '.join(NCCL_OPS)})")
    best = None
    for a, p in candidates(op, shape, graphs, consts, algos, protos, said):
        t = algo_time(op, a, p, nbytes, shape, graphs, consts)
        if t is not None and (best is None or t.time < best.time):
            best = t
    if best is None:
        raise InputError(f"{op}: no algorithm/protocol available on this communicator")
    return best

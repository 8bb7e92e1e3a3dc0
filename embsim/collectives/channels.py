"""NCCL's graph search, reduced to what the tuner needs: nChannels, bwIntra, bwInter.

NCCL (search.cc ~1036-1270) tries per-channel speeds from an arch-specific array,
highest first, and keeps the graph with the most total bandwidth; then it duplicates
channels (halving their speed) and, in a second pass, tries to raise the speed with the
channel count fixed. We do the same search on the CommShape's bottlenecks instead of on
NCCL's full path graph: a ring/tree channel crosses every GPU's fabric link once and, on
several nodes, one NIC path each way; an NVLS channel has every GPU write to the switch.
Across PCIe the channel is charged on every link of NCCL's paths as followPath does
(pci_rings: switch uplinks, socket links, the Intel root-complex 6/5); that result steers
NCCL's choice and sets the channels the kernels run, each at most at the speed of a
channel on the GPU's own link (Graphs.for_kernel).

Runtime: the kernel runs comm.nChannels = 2 x ring channels (connect.cc ~460) and NCCL
trims channels/threads for small messages (enqueue.cc ~2068-2118) -- see `runtime_lanes`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .constants import (COLLNET_MAX_THREADS, COLLNET_NODE_THRESHOLD, COLLNET_THREAD_THRESHOLD,
                        MAX_THREADS, MAXCHANNELS, NCCL_MAX_DIRECT_ARITY, THREAD_THRESHOLDS,
                        constants_for, speed_array, version_key)
from .shape import CommShape


@dataclass(frozen=True)
class Graph:
    pattern: str        # "ring" | "tree" | "nvls" | "collnet_direct" | "collnet_chain"
    n_channels: int
    bw_intra: float     # GB/s per channel
    bw_inter: float
    intra_hw: str       # "NVLINK" | "PCI"

    @property
    def total_bw(self) -> float:
        return self.n_channels * (self.bw_intra if self.bw_inter <= 0 else min(self.bw_intra, self.bw_inter))


def _fit_ring(shape: CommShape, s_intra: float, s_inter: float, chain: bool = False) -> int:
    """Channels of a ring/tree graph that fit at these per-channel speeds. Across PCIe
    (shape.pci) every link of NCCL's paths is charged as followPath does (pci_rings: the
    switch uplinks, the socket link, the Intel root-complex overhead); `chain`: a tree's
    chain on one node, which does not loop back."""
    if shape.ppn <= 1:
        # a lone GPU: each channel still leaves through its own link to the NICs
        n = (int(math.floor(shape.gpu_link_bw / s_inter + 1e-9)) if shape.gpu_link_bw > 0
             and shape.n_nodes > 1 else MAXCHANNELS // 2)
    elif shape.pci is not None:
        n = shape.pci.channels_at(s_intra, chain=chain and shape.n_nodes == 1)
    else:
        n = int(math.floor(shape.intra_bw / s_intra + 1e-9))
    if shape.n_nodes > 1:
        per_nic = int(math.floor(shape.nic_path_bw / s_inter + 1e-9))
        n = min(n, per_nic * max(1, shape.nics_per_node))
    return min(n, MAXCHANNELS // 2)


def _fit_nvls(shape: CommShape, s_intra: float, s_inter: float, channels: int) -> bool:
    """Whether `channels` NVLS heads fit at these speeds. ncclTopoSearchTryNvls charges each
    channel's speed on every GPU's link to and from the NVSwitch, twice on the channel's own
    head (search.cc: `d0 == g ? 2 : 1`), so a head's link carries (heads + 1) x the speed --
    the same bytes its kernel moves (multinode.nvls_node_bw)."""
    if (channels + 1) * s_intra > shape.intra_bw + 1e-9:
        return False
    if shape.n_nodes > 1:
        per_nic = math.ceil(channels / max(1, shape.nics_per_node))
        return per_nic * s_inter <= shape.nic_path_bw + 1e-9
    return True


def _dup_channels(n: int, bw_intra: float, bw_inter: float, arch: int,
                  cap: int = MAXCHANNELS // 2) -> tuple[int, float, float]:
    """ncclTopoDupChannels (search.cc 1036-1049): more, slower channels when they are fast,
    up to the graph's maxChannels (`cap`)."""
    if bw_intra < 25.0:
        return n, bw_intra, bw_inter
    if arch > 80 and bw_intra < 50.0 and n > 4:
        return n, bw_intra, bw_inter
    dup = min(n * 2, cap)
    factor = math.ceil(dup / n)
    return dup, bw_intra / factor, bw_inter / factor


def _lower_speed(speeds, i: int, fit, enough_bw: float, min_channels: int = 1,
                 max_channels: int | None = None) -> tuple[int, float]:
    """Pass 1 of ncclTopoCompute (search.cc), shared by the ring/tree and CollNet searches:
    from speeds[i] down, keep the speed whose channel count x speed is best; stop once it
    reaches `enough_bw` (or max_channels), at the slowest step, or when the next step is
    at most .49 of the best found. (channels, speed); 0 channels: no graph fits."""
    best_n, best_s = 0, speeds[i]
    while True:
        n = fit(speeds[i])
        if max_channels is not None:
            n = min(n, max_channels)
        if n >= min_channels and n * speeds[i] > best_n * best_s:
            best_n, best_s = n, speeds[i]
        if best_n and (best_n == max_channels or best_n * best_s >= enough_bw - 1e-9):
            break
        if i >= len(speeds) - 1 or (best_n and speeds[i + 1] / best_s <= 0.49):
            break
        i += 1
    return best_n, best_s


def _search_ring(shape: CommShape, pattern: str) -> Graph:
    chain = pattern == "tree"
    multi = shape.n_nodes > 1
    speeds = speed_array(shape.arch, inter=multi)
    max_bw = shape.nic_path_bw if multi else shape.intra_bw
    total_bw = shape.intra_bw if shape.ppn > 1 else max_bw
    i = 0
    while i < len(speeds) - 1 and (speeds[i] > max_bw + 1e-9 or speeds[i] > total_bw + 1e-9):
        i += 1
    best_n, best_s = _lower_speed(speeds, i, lambda s: _fit_ring(shape, s, s, chain), total_bw)
    if best_n == 0:
        # slower than NCCL's slowest step (a NIC under ~1 Gb/s): one channel at what the
        # path has, so the file's rate still reaches the time
        slowest = min(speeds[-1], max_bw, total_bw)
        return Graph(pattern, 1, slowest, slowest, shape.intra_hw)
    n, bw_intra, bw_inter = _dup_channels(best_n, best_s, best_s, shape.arch)
    # Pass 2: raise the speed with the channel count fixed (rings raise both speeds; trees
    # on 2 nodes raise the intra speed up to twice the inter speed).
    j = 0
    while j < len(speeds) - 1 and speeds[j] > bw_inter + 1e-9:
        j += 1
    while j > 0:
        j -= 1
        s = speeds[j]
        if pattern == "ring" or not multi:
            if _fit_ring(shape, s, s, chain) >= n:
                bw_intra = bw_inter = s
            else:
                break
        else:
            if bw_intra < 2 * bw_inter and _fit_ring(shape, s, bw_inter, chain) >= n and shape.n_nodes <= 2:
                bw_intra = s
            else:
                break
    return Graph(pattern, n, bw_intra, bw_inter, shape.intra_hw)


def _search_nvls(shape: CommShape, min_gpus: int) -> Graph | None:
    """NCCL's NVLS graph: one channel per head, at the fastest speed step whose (heads + 1)
    charges fit (_fit_nvls; NCCL's own start below totalBw / heads is never faster)."""
    if not shape.nvls_capable or shape.ppn < min_gpus:
        return None
    channels = shape.nvls_heads
    speeds = speed_array(shape.arch, inter=shape.n_nodes > 1)
    i = 0
    while i < len(speeds) and not _fit_nvls(shape, speeds[i], speeds[i], channels):
        i += 1
    if i == len(speeds):
        return None
    bw_intra = bw_inter = speeds[i]
    # Pass 2 (NVLS): raise bwInter while it is below twice bwIntra.
    while i > 0 and bw_inter < 2 * bw_intra:
        if not _fit_nvls(shape, bw_intra, speeds[i - 1], channels):
            break
        i -= 1
        bw_inter = speeds[i]
    return Graph("nvls", channels, bw_intra, bw_inter, shape.intra_hw)


def collnet_supported(shape: CommShape) -> bool:
    """NCCL sets up CollNet on this communicator (before its graphs are searched): the
    network reduces in the switch (topology `network.sharp`, standing for the SHARP plugin
    loaded and NCCL_COLLNET_ENABLE=1, which NCCL leaves off by default), on at least
    NCCL_COLLNET_NODE_THRESHOLD nodes (init.cc), with at most NCCL_MAX_DIRECT_ARITY + 1 GPUs
    per node (init.cc up to 2.2x disables CollNet above it, enqueue.cc getAlgoInfo skips
    both CollNet algorithms above it from 2.26)."""
    return (shape.collnet and shape.n_nodes >= COLLNET_NODE_THRESHOLD
            and shape.ppn <= NCCL_MAX_DIRECT_ARITY + 1 and shape.nic_bw > 0)


def collnet_heads(shape: CommShape) -> int:
    """CollNetDirect heads per node: one per NIC:GPU pair (search.cc ncclTopoSearchRecNet,
    COLLNET_DIRECT: `graph->nChannels < netCount`, one head per GPU), at most maxChannels =
    min(NCCL_MAX_DIRECT_ARITY + 1, the node's GPUs) (search.cc ncclTopoCompute)."""
    return max(1, min(max(1, shape.nics_per_node), shape.ppn, NCCL_MAX_DIRECT_ARITY + 1))


def _fit_direct(shape: CommShape, s_intra: float, s_inter: float, heads: int) -> int:
    """CollNetDirect heads that fit at these speeds (search.cc ncclTopoSearchTryCollnetDirect):
    a head charges its speed x 1/(ppn-1) on the path to and from every other GPU, so with c
    heads a head's NVLink carries s_intra (1 + (c-1)/(ppn-1)) each way; its NIC carries
    s_inter (one head per NIC)."""
    if s_inter > shape.nic_path_bw + 1e-9:
        return 0
    if shape.ppn <= 1:
        return heads
    fits = [c for c in range(1, heads + 1)
            if s_intra * (1 + (c - 1) / (shape.ppn - 1)) <= shape.intra_bw + 1e-9]
    return max(fits, default=0)


def _search_collnet(shape: CommShape, fit, min_channels: int, max_channels: int) -> Graph | None:
    """ncclTopoCompute for a CollNet graph (search.cc): pass 1 from the fastest inter-node
    speed under the NIC path and totalBw x ppn/(ppn-1) ("algo other than RING ... increase
    the NVLink bw artificially"), lowering the speed while no graph of min_channels is found
    or a lower speed may still pay (> .49 of the best); then ncclTopoDupChannels up to
    max_channels; pass 2 raises bwIntra alone while it is below twice bwInter ("increase
    bwIntra for trees (2 nodes or collnet)"). `fit(s_intra, s_inter)`: channels that fit."""
    speeds = speed_array(shape.arch, inter=True)
    total = shape.intra_bw * shape.ppn / (shape.ppn - 1) if shape.ppn > 1 else shape.nic_path_bw
    i = 0
    while i < len(speeds) - 1 and (speeds[i] > shape.nic_path_bw + 1e-9
                                   or speeds[i] * min_channels > total + 1e-9):
        i += 1
    best_n, best_s = _lower_speed(speeds, i, lambda s: fit(s, s), shape.intra_bw,
                                  min_channels, max_channels)
    if best_n == 0:
        return None
    n, bw_intra, bw_inter = _dup_channels(best_n, best_s, best_s, shape.arch, max_channels)
    j = 0
    while j < len(speeds) - 1 and speeds[j] > bw_intra + 1e-9:
        j += 1
    while j > 0 and bw_intra < 2 * bw_inter and fit(speeds[j - 1], bw_inter) >= n:
        j -= 1
        bw_intra = speeds[j]
    return Graph("collnet", n, bw_intra, bw_inter, shape.intra_hw)


def search_collnet(shape: CommShape, ring: Graph, own_direct_graph: bool = True) -> tuple[Graph | None, Graph | None]:
    """(CollNetDirect graph, CollNetChain graph), None where NCCL has none (init.cc).

    Chain: pattern TREE with collNet = 1, min = max channels = the ring graph's: the tree
    search, whose chain starts and ends at a NIC. Direct (2.22+, `own_direct_graph`):
    pattern COLLNET_DIRECT, one channel per NIC:GPU head (collnet_heads, _fit_direct), only
    on NVSwitch nodes (tuning.cc disables it where nvsCount == 0); up to 2.21 CollNetDirect
    is tuned on the chain graph. No chain graph: NCCL turns CollNet off (init.cc
    `graphs[NCCL_ALGO_COLLNET_CHAIN]->nChannels == 0`)."""
    if not collnet_supported(shape):
        return None, None
    chain = _search_collnet(shape, lambda si, sn: _fit_ring(shape, si, sn, chain=True),
                            ring.n_channels, ring.n_channels)
    if chain is None:
        return None, None
    chain = replace(chain, pattern="collnet_chain")
    if shape.intra != "nvswitch":
        return None, chain
    if not own_direct_graph:
        return replace(chain, pattern="collnet_direct"), chain
    heads = collnet_heads(shape)
    direct = _search_collnet(shape, lambda si, sn: _fit_direct(shape, si, sn, heads), 1,
                             min(NCCL_MAX_DIRECT_ARITY + 1, shape.ppn))
    return (None if direct is None else replace(direct, pattern="collnet_direct")), chain


@dataclass(frozen=True)
class Graphs:
    ring: Graph
    tree: Graph
    nvls: Graph | None
    comm_channels: int      # runtime CTAs for Ring/Tree (connect.cc: 2 x ring channels)
    nvls_channels: int      # runtime NVLS channels (nvls.cc 155-213)
    # Across PCIe: the ring and tree the kernels move data on (_kernel_graph: NCCL's
    # channels at the speed of a channel on each GPU's own link). NCCL's search result
    # above steers its choice and its tuning table (None: the same graphs).
    kernel_ring: Graph | None = None
    kernel_tree: Graph | None = None
    collnet_direct: Graph | None = None     # None: no CollNet (search_collnet)
    collnet_chain: Graph | None = None

    def for_kernel(self) -> "Graphs":
        """These graphs with the ring and tree the kernels' data rate is modelled on."""
        if self.kernel_ring is None:
            return self
        return replace(self, ring=self.kernel_ring, tree=self.kernel_tree)


# What one CTA of NCCL's Simple protocol moves GPU to GPU across PCIe (P2P writes into the
# peer's buffer), GB/s of AllReduce bus bandwidth. FITTED on one named point:
# voipmonitor/rtx6kpro optimization/nccl-tuning.md ("Impact of Channel Count"): 8x RTX PRO
# 6000 Blackwell (PCIe Gen5 x16) on the root ports of two AMD Turin sockets, NCCL_P2P_LEVEL=SYS,
# default settings, "2 channels" (NCCL's one ring at 15 of the 16 GB/s AMD_BW, duplicated
# by connect.cc), 22.2 GB/s at 32 MiB: 22.2 / 2. Not link-bound there (Gen5 x16 carries
# ~2x). Held-out checks: an 8x RTX 4090 Gen4 root-port box with P2P on (blog.chlc.cc,
# 20.6 GB/s; 2 CTAs if its NCCL is 2.19-2.22), and boxes of 4 CTAs on PCIe switches
# reaching 40-46 GB/s (10.0-11.6 a CTA): docs/validation.md.
PCIE_P2P_CTA_GBPS = 11.1
CTAS_PER_RING_CHANNEL = 2           # connect.cc duplicates every ring channel (compute_channels)


def _kernel_graph(nccl: Graph, link: Graph, fabric_ratio: float = 1.0,
                  cta_bw: float | None = None) -> Graph:
    """The graph the kernels move data on across PCIe: the channels NCCL's search found
    (each launched as CTAS_PER_RING_CHANNEL CTAs, connect.cc), all of them at most the GPU's
    own link's total. NCCL's per-link charges (a socket link, an Intel root complex) only
    cost channels; its lower speed step is its own margin, not the rate (a 2080 Ti pair's
    broadcast moves 11.1 GB/s on NCCL's one ring at 5). What one channel moves:
    - GPU to GPU (`cta_bw`, PciLayout.ring_peer_to_peer): its CTAs at `cta_bw` each
      (PCIE_P2P_CTA_GBPS): a dual-socket box whose search keeps 1 ring moves ~22 GB/s on
      Gen4 and Gen5 alike;
    - staged through host memory (SHM, `cta_bw` None): at most a channel on the GPU's own
      link as NCCL's search would rate it alone (12 GB/s on Gen4 x16). No published run
      separates an SHM CTA's rate; the P2P-off curves (docs/validation.md) disagree with
      each other by 4x, so this stays NCCL's own figure.

    The caller scales the result by the file's link rate over NCCL's (`fabric_ratio`): a
    slower link slows the link's total, not what one channel could move, so the channel
    cap is taken back out of that scaling there."""
    n = nccl.n_channels
    per_channel = CTAS_PER_RING_CHANNEL * cta_bw if cta_bw else link.bw_intra
    bw = min(per_channel / min(1.0, fabric_ratio), link.total_bw / n)
    return Graph(link.pattern, n, bw, bw, link.intra_hw)


def search_graphs(shape: CommShape, consts=None) -> Graphs:
    """The communicator's graphs; `consts` (NcclConstants) picks the release's NVLS CTA
    count (nvls.cc ncclNvlsInit; the newest release's when omitted)."""
    consts = constants_for(None) if consts is None else consts
    ring = _search_ring(shape, "ring")
    tree = _search_ring(shape, "tree")
    # ncclNvlsInit counts the GPUs of the node's topology (the MNNVL clique's across trays)
    nvls = _search_nvls(shape, consts.nvls_min_gpus)
    direct, chain = search_collnet(shape, ring, consts.collnet_direct_graph)
    comm_channels = compute_channels(shape, ring, consts.version, chain)
    sm100 = consts.nvls_channels_sm100
    if shape.arch >= 100 and sm100 is not None:
        nvls_channels = sm100[1] if shape.n_nodes > 1 else sm100[0]
    else:
        nvls_channels = 16
    kernel_ring = kernel_tree = None
    if shape.pci is not None:
        link_only = replace(shape, pci=None)
        cta = PCIE_P2P_CTA_GBPS if shape.pci.ring_peer_to_peer else None
        kernel_ring = _kernel_graph(ring, _search_ring(link_only, "ring"), shape.fabric_ratio, cta)
        kernel_tree = _kernel_graph(tree, _search_ring(link_only, "tree"), shape.fabric_ratio, cta)
    return Graphs(ring, tree, nvls, comm_channels, nvls_channels, kernel_ring, kernel_tree, direct, chain)


def compute_channels(shape: CommShape, ring: Graph, version: str | None = None,
                     collnet_chain: Graph | None = None) -> int:
    """comm->nChannels, the CTAs Ring/Tree (and p2p, via p2pnChannels) run (connect.cc
    ncclTopoPostset): the ring graph's channels duplicated, then on Hopper+ across nodes
    doubled once more when a ring channel is faster than 45 GB/s inside the node ("Use 4
    compute channels per search channel to reach peak BW on <8 PPN"): 2.18-2.19 while
    2 x channels fit MAXCHANNELS, from 2.20 only below 16; sm90 only up to 2.24, sm90 and
    newer from 2.25. `version`: the release's table (None: the newest).
    With CollNet set up (`collnet_chain`, its chain graph) the duplicated channels grow by
    half where that graph is faster inside the node than across it and a node has 2+ GPUs
    ("Add more channels to saturate intra-node bandwidth, except the 1 PPN case": connect.cc
    ncclTopoPostset, before the Hopper doubling; up to 2.21 on the one collNetGraph)."""
    ch = min(MAXCHANNELS, 2 * ring.n_channels)
    if (collnet_chain is not None and collnet_chain.bw_intra > collnet_chain.bw_inter
            and shape.n_ranks > shape.n_nodes):
        ch = min(MAXCHANNELS, ch + ch // 2)
    key = version_key(version) if version else None
    newest = key is None
    arch_ok = shape.arch >= 90 if (newest or key >= (2, 25)) else 90 <= shape.arch < 100
    if arch_ok and shape.n_nodes > 1 and ring.bw_intra > 45.0:
        room = ch < 16 if (newest or key >= (2, 20)) else 2 * ch <= MAXCHANNELS
        if room:
            ch = min(MAXCHANNELS, 2 * ch)
    return ch


def runtime_lanes(nbytes: float, algo: str, proto: str, n_ranks: int, channels: int,
                  heads: int = 1) -> tuple[int, int]:
    """(channels, threads per channel) NCCL launches for this size (enqueue.cc ~2068-2118).

    Channels drop while nBytes < nc*nt*threshold, then threads halve (multiples of 128).
    CollNetDirect (`heads`: its heads per node) drops channels in steps of ncSwitch = 16,
    8, 4, 2, 1 against nc x nt x heads x threshold, halving the threshold at each 1.5 x
    ncSwitch ("CollNet channel tuning"), and keeps its threads.
    """
    if algo == "CollNetDirect":
        nc, nt, thr = channels, COLLNET_MAX_THREADS, COLLNET_THREAD_THRESHOLD
        switch, short = 16, True
        while switch >= 1 and short:
            while True:
                short = nbytes < nc * nt * heads * thr
                if not (short and nc > switch):
                    break
                if nc == switch + switch // 2:
                    thr //= 2
                nc -= 1
            switch //= 2
        return nc, nt
    if algo == "CollNetChain":
        nc, nt, threshold = channels, COLLNET_MAX_THREADS, COLLNET_THREAD_THRESHOLD
    else:
        nc, nt = channels, MAX_THREADS[proto]
        threshold = THREAD_THRESHOLDS[proto] * (n_ranks if (algo == "Ring" and proto == "LL") else 1)
    while nbytes < nc * nt * threshold:
        if nc >= 2:
            nc -= 1
        elif nt % 128 == 0 and nt > 128:
            nt //= 2
        else:
            break
    return nc, nt


def max_threads(algo: str, proto: str) -> int:
    """comm->maxThreads of a pair (tuning.cc): NCCL_MAX_NTHREADS for CollNet."""
    return COLLNET_MAX_THREADS if algo in ("CollNetDirect", "CollNetChain") else MAX_THREADS[proto]


def runtime_fraction(nbytes: float, algo: str, proto: str, n_ranks: int, graphs: Graphs,
                     heads: int = 1) -> float:
    """Share of the full kernel's parallelism that runs for this size (1 for large messages).

    The model's bandwidth assumes every channel and thread is busy; a trimmed launch moves
    data proportionally slower. This is what separates simulated from model-predicted time.
    """
    full = graphs.nvls_channels if algo in ("NVLS", "NVLSTree") else graphs.comm_channels
    nc, nt = runtime_lanes(nbytes, algo, proto, n_ranks, full, heads)
    return min(1.0, (nc * nt) / (full * max_threads(algo, proto)))

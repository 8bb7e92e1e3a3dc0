"""NCCL's tuning constants as data, one table per NCCL version.

Every number here is read from NVIDIA/nccl `src/graph/tuning.cc`, `src/graph/topo.h`,
`src/graph/search.cc` and `src/include/device.h` (see
docs/sources/nccl-cost-model.md §1.3, §1.7, §1.8 for the line numbers and the tag diffs).
Latencies are in µs and bandwidths in GB/s (1e9 B/s): NCCL's own units, so that the
model in nccl_model.py reads like NCCL's and can be checked against its logs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType

from embsim.errors import InputError
from embsim.nccl_names import ALGOS, PROTOS  # noqa: F401  (the one list of each)

HW = ("NVLINK", "PCI", "NET")

# Data-structure facts, not tuning constants (device.h 91-115, comm.h 49-51).
MAX_THREADS = MappingProxyType({"LL": 512, "LL128": 640, "Simple": 512})
THREAD_THRESHOLDS = MappingProxyType({"LL": 8, "LL128": 8, "Simple": 64})  # bytes per thread
MAXCHANNELS = 64
NCCL_MAX_NVLS_ARITY = 32
# CollNet (device.h): a CollNetDirect head reaches at most 7 peers, so at most 8 heads and 8
# GPUs per node (init.cc: CollNet is off above NCCL_MAX_DIRECT_ARITY + 1 local ranks).
NCCL_MAX_DIRECT_ARITY = 7
# init.cc NCCL_PARAM(CollNetNodeThreshold, "COLLNET_NODE_THRESHOLD", 2): CollNet is off on
# fewer nodes (every release 2.18-2.30)
COLLNET_NODE_THRESHOLD = 2
# tuning.cc threadThresholds[COLLNET_DIRECT|COLLNET_CHAIN][SIMPLE] = 512 bytes per thread
# (every release 2.18-2.30); NCCL_MAX_NTHREADS = 640 threads (maxThreads of both)
COLLNET_THREAD_THRESHOLD = 512
COLLNET_MAX_THREADS = 640
NCCL_STEPS = 8
# Buffer bytes per connection and protocol, NCCL's defaults (init.cc DEFAULT_*BUFFSIZE):
# LL 8 lines x 512 threads x 8 steps x 16 B; LL128 120 u64 x 640 threads x 8 steps x 8 B;
# Simple 4 MiB. NCCL_BUFFSIZE / NCCL_LL_BUFFSIZE / NCCL_LL128_BUFFSIZE replace them
# (nccl_env.py).
DEFAULT_BUFF_BYTES = MappingProxyType({"LL": 8 * 512 * NCCL_STEPS * 16,
                                       "LL128": 120 * 640 * NCCL_STEPS * 8, "Simple": 1 << 22})
# p2p step per path (init.cc NCCL_P2P_NET/NVL/PCI_CHUNKSIZE defaults).
DEFAULT_P2P_CHUNK = MappingProxyType({"net": 128 << 10, "nvl": 512 << 10, "pci": 128 << 10})

# Per-channel search speeds, GB/s (search.cc ~1075-1100), highest first.
SPEED_INTRA = MappingProxyType({
    "default": (40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3),
    90: (60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3),
    100: (90, 80, 70, 60, 50, 45, 40, 30, 24, 20, 19, 18),
})
SPEED_INTER = MappingProxyType({
    "default": (48, 30, 28, 24, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3, 2.4, 1.2, 0.24, 0.12),
    90: (48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12),
    100: (96, 86, 80, 48, 45.1, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12),
})


def arch_family(arch: int) -> int:
    """NCCL's arch buckets for its tables: 70 Volta, 80 Ampere, 90 Hopper, 100 Blackwell."""
    if arch >= 100:
        return 100
    if arch >= 90:
        return 90
    if arch >= 80:
        return 80
    return 70


def speed_array(arch: int, inter: bool) -> tuple[float, ...]:
    table = SPEED_INTER if inter else SPEED_INTRA
    fam = arch_family(arch)
    return table[fam] if fam in (90, 100) else table["default"]


def _lat(tree, ring, nvls, nvlstree, pat):
    return MappingProxyType({"Tree": tree, "Ring": ring, "NVLS": nvls, "NVLSTree": nvlstree, "PAT": pat})


@dataclass(frozen=True)
class NcclConstants:
    """One NCCL version's constants and the formula variants that changed between tags."""

    version: str
    base_lat: MappingProxyType          # algo -> (LL, LL128, Simple) µs
    hw_lat: MappingProxyType            # hw -> algo -> (LL, LL128, Simple) µs
    ll_max_bw: MappingProxyType         # row -> (1 node, 2 nodes, 4+ nodes); see nccl_model.ll_max_bw
    per_ch_ring_ll128: MappingProxyType
    per_ch_tree_ll128: MappingProxyType
    per_ch_tree: MappingProxyType
    per_ch_nvlstree: MappingProxyType | None
    nvls_efficiency: MappingProxyType | None   # None: the older fixed 5/6 algBw ratio
    nvlink_per_link: MappingProxyType   # arch -> GB/s per NVLink (topo.h)
    ring_ll_factor_old: bool            # 2.18-2.20: Ring LL x1/4 or x1/3 (2.21+: x1/2)
    ring_ll128_ppn1_factor: float       # Ring LL128 factor when 1 GPU per node
    tree_092_allreduce_only: bool
    nvls_allgather_rs: bool             # NVLS AllGather/ReduceScatter (2.27+)
    has_pat: bool
    pat_factor: float = 0.75            # PAT busBw x (0.85 in 2.23)
    nvls_lat_old: bool = False          # 2.18: NVLS lat = base (+ NET); NVLSTree + 2(nNodes-1) NET
    nvlstree_ratio_old: bool = False    # 2.18: NVLSTree algBw 0.70 nNodes/(2(nNodes-1)), later 5/6
    ll128_chunk_rounding: bool = False  # <= 2.19: runRing rounds LL128 chunks to nthreads x 30 B
    nvls_small_chunk_multinode: bool = True  # 32 KiB NVLS chunks on slow multi-node NVLS
    nvls_host_split: bool = True        # 2.20+: one node's NVLS work is split over all channels
    p2p_max_channels_4x: bool = False   # <= 2.19: one node splits a peer's op over at most
                                        # 4 x p2pnChannels / nRanks channels (enqueue.cc)
    # NVLSTree chunk before the size rules (enqueue.cc computeColl): 2.21+ comm->nvlsChunkSize
    # (NCCL_NVLS_CHUNKSIZE, 128 KiB); up to 2.20 the Simple step x chunkSteps (512 KiB). 2.19+
    # caps it at 64 KiB on 4+ nodes (NCCL_NVLSTREE_MAX_CHUNKSIZE -2 default).
    nvlstree_chunk: int = 128 << 10
    nvlstree_chunk_is_step: bool = False   # up to 2.20: the chunk is a Simple step instead
    nvlstree_chunk_cap_4nodes: bool = True
    ring_plateau_sm80: float = 1.4      # Ring/Simple multi-node latency x, "plateau effect"
    ring_plateau_volta: float = 1.9
    # NVLS CTAs on Blackwell (nvls.cc ncclNvlsInit), (one node / NVLink domain, several nodes):
    # 2.27+ NVLS_NCHANNELS_SM100_NVL 24 and NVLS_NCHANNELS_SM100 32; 2.25-2.26 32 for any
    # sm100 comm; up to 2.24 the NCCL_NVLS_NCHANNELS default 16 for every GPU (None).
    nvls_channels_sm100: tuple[int, int] | None = (24, 32)
    # NVLS (and NVLSTree) need at least this many GPUs in the node's topology (nvls.cc
    # ncclNvlsInit: `gpuCount <= 2` returns without NVLS up to 2.28.3, `gpuCount < 2` from
    # 2.28.7): two GPUs get NVLS only from 2.28.7.
    nvls_min_gpus: int = 2
    # 2.29+: ncclTopoGetAlgoTime applies treeCorrectionFactor to NVLSTree AllReduce on sm100 x86
    nvlstree_tree_correction: bool = True
    # GPU archs LL128 is on for by default (tuning.cc, the LL128 `pEnable` block): up to 2.26 a
    # `switch (minCompCap)` with cases 70, 80, 90 (v2.24.3-1), + 100, 120 (v2.25.1-1, v2.26.2-1)
    # and `default: pEnable &= 0` (sm75, sm86, sm89 off); from v2.27.3-1 every sm70+ GPU
    # (`!(minCompCap < 70 ...)`). None: sm70 and newer.
    ll128_archs: tuple[int, ...] | None = None
    # <= 2.22: a multi-node Ring AllReduce's latency counts 2 x nNodes network steps
    # (tuning.cc `nInterSteps = coll == ncclFuncAllReduce ? (nNodes > 1 ? 2*nNodes : 0)`,
    # v2.21.5-1 line 161, v2.22.3-1 line 159); 2.23 counts 2 x (nNodes - 1) (v2.23.4-1 line 258).
    ring_allreduce_inter_steps_2n: bool = False
    # 2.23+: with one GPU per node every algorithm's network hop is priced at the Tree's
    # hwLat[NET] ("With ppn=1 latencies are fully exposed", v2.23.4-1 tuning.cc); up to 2.22
    # each algorithm's own hwLat[NET][a][p] (v2.22.3-1 line 226).
    ppn1_tree_net_latency: bool = True
    # <= 2.19: computeColl halves the Tree/Simple chunk while a channel has fewer than
    # depth x 8 / x 4 / x 1 chunks (floors 128/64/32 KiB); 2.20 dropped it, so from 2.20 a
    # Tree/Simple chunk is a whole Simple step (buffSize / NCCL_STEPS) at every size.
    tree_simple_chunk_halving: bool = False
    # CollNet (tuning.cc hwLat, Simple only): hw -> (CollNetDirect, CollNetChain) µs; the
    # baseLat of both is 0 for Simple in every release. 2.19+ (v2.19.4-1 ... v2.30.4-1):
    # NVLink/PCI 3.7 / 2.8, NET 31 / 30; 2.18 (v2.18.5-1): NVLink 8.0 / 4.75, PCI 8.0 / 8.0,
    # NET 10.7 / 14.
    collnet_hw_lat: MappingProxyType = field(default_factory=lambda: MappingProxyType(
        {"NVLINK": (3.7, 2.8), "PCI": (3.7, 2.8), "NET": (31.0, 30.0)}))
    # CollNetDirect's "arity serialization latency" per local peer (tuning.cc): 0.4 µs from
    # 2.19, 0.5 in 2.18
    collnet_arity_us: float = 0.4
    # 2.22+: CollNetDirect has its own graph (init.cc collNetDirectGraph, pattern
    # COLLNET_DIRECT, one channel per NIC:GPU head); up to 2.21 one collNetGraph (pattern
    # TREE, the ring's channel count) serves both CollNet algorithms (graphs[] = {tree, ring,
    # collNet, collNet, nvls, nvls}).
    collnet_direct_graph: bool = True
    # The run's buffer and p2p chunk sizes (NCCL's defaults unless nccl_env.apply_env set
    # them from NCCL_BUFFSIZE & co; `env` then says which).
    buff_bytes: MappingProxyType = field(default_factory=lambda: DEFAULT_BUFF_BYTES)
    p2p_chunk: MappingProxyType = field(default_factory=lambda: DEFAULT_P2P_CHUNK)
    env: str = ""


_BASE_230 = _lat((6.8, 14.0, 8.4), (6.6, 14.0, 8.4), (0, 0, 0), (0, 0, 0), (8.0, 8.0, 8.0))
_HW_230 = MappingProxyType({
    "NVLINK": _lat((.6, 1.25, 4.0), (.6, 1.9, 3.4), (0, 0, 25), (0, 0, 25), (0, 0, 4.0)),
    "PCI": _lat((1.0, 1.9, 4.0), (1.0, 2.5, 5.7), (0, 0, 0), (0, 0, 0), (0, 0, 4.0)),
    "NET": _lat((5.0, 8.5, 14), (2.7, 4.0, 14.0), (0, 0, 18), (0, 0, 20.9), (0, 0, 14)),
})
_FAM = lambda v70, v80, v90, v100: MappingProxyType({70: v70, 80: v80, 90: v90, 100: v100})  # noqa: E731

NCCL_2_30 = NcclConstants(
    version="2.30",
    base_lat=_BASE_230,
    hw_lat=_HW_230,
    ll_max_bw=_FAM((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (141.0, 45.0, 35.0), (282.0, 90.0, 70.0)),
    per_ch_ring_ll128=_FAM((20, 20, 20), (20, 20, 20), (36.7, 36.7, 36.7), (40, 40, 40)),
    per_ch_tree_ll128=_FAM((20, 20, 20), (20, 20, 20), (36.7, 36.7, 29.0), (55.6, 31.67, 20.0)),
    per_ch_tree=_FAM((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0), (70.0, 42.8, 24.0)),
    per_ch_nvlstree=_FAM((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (0, 57.7, 45.5), (0, 96.0, 80.0)),
    nvls_efficiency=MappingProxyType({70: 0.0, 80: 0.0, 90: 0.85, 100: 0.74}),
    nvlink_per_link=MappingProxyType({60: 18.0, 70: 20.0, 80: 20.0, 86: 12.0, 90: 20.6, 100: 40.1}),
    ring_ll_factor_old=False,
    ring_ll128_ppn1_factor=0.92,
    tree_092_allreduce_only=True,
    nvls_allgather_rs=True,
    has_pat=True,
)

# Older releases, each as its differences from the next newer one (git show
# vX:src/graph/tuning.cc, src/graph/topo.h, src/device/all_reduce.h; nccl-cost-model.md §1.8).
_NVL_2_25 = MappingProxyType({60: 18.0, 70: 20.0, 80: 20.0, 86: 12.0, 90: 20.6, 100: 40.0})
_NVL_2_20 = MappingProxyType({60: 18.0, 70: 20.0, 80: 20.0, 86: 12.0, 90: 20.6, 100: 40.0})
_NVL_2_19 = MappingProxyType({60: 18.0, 70: 20.0, 80: 20.0, 86: 12.0, 90: 20.0, 100: 40.0})



def _sm100_rows(consts: NcclConstants, ll_n1: float, ring_ll128: tuple, tree_ll128: tuple,
                tree: tuple, nvlstree: tuple | None = None) -> dict:
    """Blackwell's (sm100) rows of llMaxBws / perChMax* (1, 2, 4+ nodes) for a release.

    tuning.cc differs per release for sm100 (git show vX:src/graph/tuning.cc): up to 2.24
    there is no Blackwell row and compCapIndex sends sm100 to Hopper's; 2.25-2.27 have rows
    twice Hopper's; 2.28.9 has its own Tree rows, Ring LL128 (2 x 36.7, 34.6, 2 x 36.7) and
    NVLSTree (0, 96, 43.8); 2.29 Ring LL128 40 everywhere; 2.30 NVLSTree 80 on 4+ nodes.
    Only the one-node column of llMaxBws is per arch (several nodes read the CPU's row).
    """
    def row(table, value):
        return MappingProxyType({**table, 100: tuple(value)})
    out = dict(ll_max_bw=row(consts.ll_max_bw, (ll_n1,) + tuple(consts.ll_max_bw[100][1:])),
               per_ch_ring_ll128=row(consts.per_ch_ring_ll128, ring_ll128),
               per_ch_tree_ll128=row(consts.per_ch_tree_ll128, tree_ll128),
               per_ch_tree=row(consts.per_ch_tree, tree))
    if nvlstree is not None:
        out["per_ch_nvlstree"] = row(consts.per_ch_nvlstree, nvlstree)
    return out


# Hopper's rows (llMaxBws one node, Ring LL128, Tree LL128, Tree), which sm100 reads up to
# 2.24 and doubles in 2.25-2.27.
_HOPPER = (141.0, (36.7, 36.7, 36.7), (36.7, 36.7, 29.0), (38.7, 41.4, 36.0))
_TWICE_HOPPER = (2 * _HOPPER[0],) + tuple(tuple(2 * v for v in r) for r in _HOPPER[1:])
# 2.29: 2.30 but NVLSTree 43.8 per channel on 4+ Blackwell nodes.
NCCL_2_29 = replace(NCCL_2_30, version="2.29", **_sm100_rows(
    NCCL_2_30, 282.0, (40.0, 40.0, 40.0), (55.6, 31.67, 20.0), (70.0, 42.8, 24.0), (0, 96.0, 43.8)))
# 2.28 (2.28.9): Ring LL128 (73.4, 34.6, 73.4) on sm100; no NVLSTree tree correction.
NCCL_2_28 = replace(NCCL_2_29, version="2.28", nvlstree_tree_correction=False, **_sm100_rows(
    NCCL_2_29, 282.0, (73.4, 34.6, 73.4), (55.6, 31.67, 20.0), (70.0, 42.8, 24.0), (0, 96.0, 43.8)))
# 2.27: NVLS AllGather/ReduceScatter, SM100 NVLink 40.1; NVLS bw still min(intra, inter)
# with the fixed 5/6 ratio (the nvlsEfficiency formula is 2.28's); hwLat[NET][NVLSTree] 14
# (20.9 from 2.28.9).
_HW_227 = MappingProxyType({**_HW_230, "NET": _lat((5.0, 8.5, 14), (2.7, 4.0, 14.0), (0, 0, 18), (0, 0, 14), (0, 0, 14))})
NCCL_2_27 = replace(NCCL_2_28, version="2.27", per_ch_nvlstree=None, nvls_efficiency=None, hw_lat=_HW_227,
                    nvls_min_gpus=3,
                    **_sm100_rows(NCCL_2_28, *_TWICE_HOPPER))
# 2.23-2.26: no NVLS AllGather/ReduceScatter; SM100 NVLink 40.0 from 2.25; PAT x0.85 in 2.23.
NCCL_2_26 = replace(NCCL_2_27, version="2.26", nvls_allgather_rs=False, nvlink_per_link=_NVL_2_25,
                    nvls_channels_sm100=(32, 32), ll128_archs=(70, 80, 90, 100, 120))
NCCL_2_24 = replace(NCCL_2_26, version="2.24", nvls_channels_sm100=None, ll128_archs=(70, 80, 90),
                    **_sm100_rows(NCCL_2_26, *_HOPPER))
NCCL_2_23 = replace(NCCL_2_24, version="2.23", pat_factor=0.85)
# 2.21-2.22: Tree Simple base 0 and hwLat 28; Tree x0.92 for every collective; Ring LL128
# x0.7 with one GPU per node; no PAT.
_HW_222 = MappingProxyType({
    "NVLINK": _lat((.6, 1.25, 28), (.6, 1.9, 3.4), (0, 0, 25), (0, 0, 25), (0, 0, 0)),
    "PCI": _lat((1.0, 1.9, 28), (1.0, 2.5, 5.7), (0, 0, 0), (0, 0, 0), (0, 0, 0)),
    "NET": _lat((5.0, 8.5, 28), (2.7, 4.0, 14.0), (0, 0, 18), (0, 0, 14), (0, 0, 0)),
})
NCCL_2_22 = replace(NCCL_2_23, version="2.22",
                    base_lat=_lat((6.8, 14.0, 0.0), (6.6, 14.0, 8.4), (0, 0, 0), (0, 0, 0), (0, 0, 0)),
                    hw_lat=_HW_222, ring_ll128_ppn1_factor=0.7, tree_092_allreduce_only=False,
                    has_pat=False, nvlink_per_link=_NVL_2_20,
                    ring_allreduce_inter_steps_2n=True, ppn1_tree_net_latency=False)
NCCL_2_21 = replace(NCCL_2_22, version="2.21", collnet_direct_graph=False)
# 2.19-2.20: Ring LL x1/4 (AllReduce, Reduce, multi-node) or x1/3; NVLS hwLat 23; Hopper's
# one-node llMaxBws is Ampere's 87.7 (v2.20.5-1 tuning.cc line 89: the Hopper row reads
# {87.7, 22.5, 19.0}; 141.0 from v2.21.5-1). Several nodes read the CPU's row, as before.
NCCL_2_20 = replace(NCCL_2_21, version="2.20", ring_ll_factor_old=True, nvlstree_chunk_is_step=True,
                    ll_max_bw=MappingProxyType({**NCCL_2_21.ll_max_bw, 90: (87.7, 22.5, 19.0)}),
                    hw_lat=MappingProxyType({
    **_HW_222, "NVLINK": _lat((.6, 1.25, 28), (.6, 1.9, 3.4), (0, 0, 23), (0, 0, 23), (0, 0, 0))}))
# 2.19: SM90 NVLink 20.0 and runRing's LL128 chunk rounding (gone in 2.20).
# Up to 2.19 the NVLS kernel lays a loop out as channel-sized blocks of nHeads x chunk
# (all_reduce.h: offset = bid*nHeads*chunkSize), so a message under one loop runs on
# ceil(size / (nHeads x chunk)) channels; 2.20 splits a node's work over every channel
# on the host (args->oneNode, workCount). Up to 2.19 scheduleP2pTasksToPlan also capped a peer's parts on one node ("avoid
# overloading channels with 8+ operations as we lose the sync warp").
NCCL_2_19 = replace(NCCL_2_20, version="2.19", nvlink_per_link=_NVL_2_19, ll128_chunk_rounding=True,
                    tree_simple_chunk_halving=True,
                    nvls_small_chunk_multinode=True, p2p_max_channels_4x=True, nvls_host_split=False)
# 2.18 (the Azure validation curves used 2.18.5): NVLS latency is its base 23 µs (+ NET),
# Tree Simple hwLat 4 / 6 / 14, the older NVLSTree ratio, no 32 KiB multi-node NVLS chunks.
NCCL_2_18 = replace(
    NCCL_2_19,
    version="2.18",
    base_lat=_lat((6.8, 14.0, 0.0), (6.6, 14.0, 8.4), (0, 0, 23.0), (0, 0, 23.0), (0, 0, 0)),
    hw_lat=MappingProxyType({
        "NVLINK": _lat((.6, 1.25, 4.0), (.6, 1.9, 3.4), (0, 0, 0), (0, 0, 0), (0, 0, 0)),
        "PCI": _lat((1.0, 1.9, 6.0), (1.0, 2.5, 5.7), (0, 0, 0), (0, 0, 0), (0, 0, 0)),
        "NET": _lat((5.0, 8.5, 14), (2.7, 4.0, 14.0), (0, 0, 18), (0, 0, 19), (0, 0, 0)),
    }),
    nvls_lat_old=True,
    nvlstree_ratio_old=True,
    collnet_hw_lat=MappingProxyType({"NVLINK": (8.0, 4.75), "PCI": (8.0, 8.0), "NET": (10.7, 14.0)}),
    collnet_arity_us=0.5,
    nvlstree_chunk_cap_4nodes=False,
    nvls_small_chunk_multinode=False,
)

# Patch releases whose tuning table differs from the minor release's newest, as
# (minor, first patch that has the minor's table, the older patches' constants). `git diff
# v2.29.2-1 v2.29.7-1 -- src/graph/tuning.cc` changes one row: Blackwell's
# perChMaxRingLL128Bws is (34.5, 34.6, 34.5) in 2.29.2 / 2.29.3 and (40, 40, 40) from 2.29.7.
NCCL_2_29_3 = replace(NCCL_2_29, version="2.29", **_sm100_rows(
    NCCL_2_29, 282.0, (34.5, 34.6, 34.5), (55.6, 31.67, 20.0), (70.0, 42.8, 24.0), (0, 96.0, 43.8)))
# 2.28.7's tuning.cc differs from 2.28.9's in two numbers (`git diff v2.28.7-1 v2.28.9-1 --
# src/graph/tuning.cc`): hwLat[NET][NVLSTree][Simple] is 14 (20.9 from 2.28.9) and Blackwell's
# perChMaxNVLSTreeBws on 4+ nodes 43.1 (43.8).
NCCL_2_28_7 = replace(
    NCCL_2_28,
    hw_lat=MappingProxyType({**NCCL_2_28.hw_lat, "NET": _lat((5.0, 8.5, 14), (2.7, 4.0, 14.0), (0, 0, 18),
                                                           (0, 0, 14), (0, 0, 14))}),
    **_sm100_rows(NCCL_2_28, 282.0, (73.4, 34.6, 73.4), (55.6, 31.67, 20.0), (70.0, 42.8, 24.0),
                  (0, 96.0, 43.1)))
# 2.28.3: 2.28.7's table but Blackwell's Ring LL128 73.4 on 2 nodes too (`git diff v2.28.3-1
# v2.28.7-1`: {2*36.7, 2*36.7, 2*36.7} -> {2*36.7, 34.6, 2*36.7}); and it still refused NVLS on
# two GPUs (nvls.cc `gpuCount <= 2`; `< 2` from v2.28.7-1).
NCCL_2_28_3 = replace(NCCL_2_28_7, nvls_min_gpus=3, **_sm100_rows(
    NCCL_2_28_7, 282.0, (73.4, 73.4, 73.4), (55.6, 31.67, 20.0), (70.0, 42.8, 24.0), (0, 96.0, 43.1)))
# (minor, first patch with the next table, that table's constants), oldest patch first for
# each minor: constants_for returns the first entry a patch is below.
PATCH_TABLES = (("2.29", 7, NCCL_2_29_3), ("2.28", 7, NCCL_2_28_3), ("2.28", 9, NCCL_2_28_7))

VERSIONS = MappingProxyType({
    "2.18": NCCL_2_18, "2.19": NCCL_2_19, "2.20": NCCL_2_20, "2.21": NCCL_2_21, "2.22": NCCL_2_22,
    "2.23": NCCL_2_23, "2.24": NCCL_2_24, "2.25": replace(NCCL_2_26, version="2.25"),
    "2.26": NCCL_2_26, "2.27": NCCL_2_27, "2.28": NCCL_2_28,
    "2.29": NCCL_2_29, "2.30": NCCL_2_30,
})
DEFAULT_VERSION = "2.30"


def release_text(version: str) -> str:
    """MAJOR.MINOR[.PATCH] from the forms users and logs carry: NCCL's banner "NCCL version
    2.18.5+cuda12.2" (the +cuda build suffix), the git tag / package release "v2.18.5-1".
    Every reading of a release goes through it (version_key, constants_for, releases)."""
    text = str(version).strip()
    text = text[1:] if text[:1] in ("v", "V") else text
    text = text.split("+", 1)[0]
    base, dash, release = text.partition("-")
    return base if dash and release.isdigit() else text


def version_key(text: str) -> tuple[int, int] | None:
    """(major, minor) of "2.27", "2.27.7", "v2.27.7-1", "2" -> (2, 0); None when it is not a version."""
    parts = release_text(text).split(".")
    try:
        return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        return None


def nearest_table(logged: str | None) -> str | None:
    """The table for a logged NCCL version: its own release from 2.18 to 2.30, else the
    nearest one (older logs -> 2.18, newer -> 2.30); None when the version is unknown."""
    if not logged or str(logged).strip() in ("", "unknown"):
        return None
    key = version_key(logged)
    if key is None:
        return None
    tables = sorted(VERSIONS, key=version_key)
    older = [t for t in tables if version_key(t) <= key]
    return older[-1] if older else tables[0]


def constants_for(version: str | None) -> NcclConstants:
    """Constants for "2.18", "2.18.5", "2.27.7", ... (every release from 2.18 to 2.30)."""
    text = DEFAULT_VERSION if version in (None, "", "unknown") else release_text(str(version))
    parts = text.split(".")
    key = ".".join(parts[:2])
    # MAJOR.MINOR or MAJOR.MINOR.PATCH: "2.18.0.1" is no NCCL release
    if key not in VERSIONS or len(parts) > 3 or not all(p.isdigit() for p in parts):
        raise InputError(f"--nccl-version {version!r}: releases 2.18 to 2.30 are modelled "
                         "(a patch level like 2.27.7, NCCL's own 2.27.7+cuda12.9 and the tag "
                         "v2.27.7-1 are accepted)")
    if len(parts) > 2:
        for minor, first, older in PATCH_TABLES:
            if key == minor and int(parts[2]) < first:
                return older
    return VERSIONS[key]


def _patch_key(release: str) -> tuple[int, int, int]:
    return tuple(int(p) for p in release.split("."))


def known_patches(minor: str) -> list[str]:
    """The tagged MAJOR.MINOR.PATCH releases of `minor` ("2.21" -> ["2.21.5"]), oldest first
    (release_dates.RELEASE_DATES: every tag of github.com/NVIDIA/nccl)."""
    from .release_dates import RELEASE_DATES
    return sorted((v for v, _ in RELEASE_DATES if v.rsplit(".", 1)[0] == minor), key=_patch_key)


def release_label(version: str | None) -> str:
    """The release an output names for a modelled --nccl-version (or a run's nccl_version):
    MAJOR.MINOR as given ("2.21": the minor's table), a tagged MAJOR.MINOR.PATCH as given,
    and a patch no tag carries ("2.21.99", or 2.27.1, which B200 systems shipped untagged)
    said to be modelled as the newest tagged release of its minor not after it (the
    minor's oldest when none is): the one whose tables constants_for gives it, as every
    patch-level change (PATCH_TABLES) starts at a tagged release."""
    if version in (None, "", "unknown"):
        return DEFAULT_VERSION
    text = release_text(str(version))
    parts = text.split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return constants_for(version).version
    text = ".".join(str(int(p)) for p in parts)     # "2.21.05" is 2.21.5
    minor = f"{parts[0]}.{int(parts[1])}"
    tagged = known_patches(minor)
    if not tagged or text in tagged:
        return text
    older = [v for v in tagged if _patch_key(v) <= _patch_key(text)]
    stand_in = older[-1] if older else tagged[0]
    return f"{text} (not a tagged release: modelled as {stand_in})"


def nvlink_per_link(consts: NcclConstants, arch: int) -> float:
    """NCCL's per-NVLink bandwidth for a GPU arch (topo.h: exact arch first, then family)."""
    if arch in consts.nvlink_per_link:
        return consts.nvlink_per_link[arch]
    fam = arch_family(arch)
    return consts.nvlink_per_link.get(fam, consts.nvlink_per_link[70])

"""Send/Recv and AlltoAll: NCCL's p2p path, which its tuning model does not cover (§1.9).

NCCL has no bandwidth/latency table for p2p; its choices are rules, and we follow them:

* channels per peer (paths.cc ncclTopoGetNchannels): an NVLink peer gets
  2 x (path bw / per-link bw) channels, a PCIe peer 2, a network peer
  max(#NICs, ceil(NIC bw / 14 GB/s)); rounded up to a power of two and capped by the
  p2p channel count (pow2Up of the comm's channels); across nodes halved until every peer
  of a round fits (ncclTopoComputeP2pChannels).
* parts (enqueue.cc addP2pToPlan): an op starts on nChannelsMin channels (halved until
  nChannelsMin x nRanks fits in the p2p channels) and doubles while a part is larger than
  32 steps (one step across nodes), up to the channels per peer.
* steps: every part moves in chunks of NCCL_P2P_NVL_CHUNKSIZE 512 KiB over NVLink,
  NCCL_P2P_PCI_CHUNKSIZE / NCCL_P2P_NET_CHUNKSIZE 128 KiB over PCIe and the network
  (init.cc), and each chunk pays the Simple protocol's handshake (NCCL's per-hop latency
  over a chunk's slices, as pipeline.step_us) but not the ring's P2P-read round trip: the
  send and recv warps are separate groups joined by an 8-step FIFO, so the sender runs
  ahead and the reader finds its step ready; LL below 16 KiB per channel (enqueue.cc
  NCCL_P2P_LL_THRESHOLD).
* peers in flight: p2pnChannels / channels-per-op x NCCL_MAX_DEV_WORK_P2P_PER_BATCH (8)
  ops run at once; more peers run in rounds, each paying its steps.
* bandwidth: the link bandwidths NCCL's topology assigns (NVLink count x per-link
  constant, PCIe width x speed, NIC Gb/s / 8), LL at half (8 data bytes per 16 B line).
* warps: a p2p CTA has NCCL_MAX_NTHREADS = 640 threads (20 warps), shared by the works
  (peer ops) the channel holds. Up to 2.21 (enqueue.cc finishWorkP2p) each send and each
  recv is a group: pow2Up(2 x works) groups, recv nWarp and send nWarp+1 warps, nWarp the
  first power of two with nWarp x groups > 10; from 2.22 (sendrecv.h RunWorkBatch) a work
  gets 20 // works warps, split recv (n-1)//2 and send the rest (n//2 each up to 4). Only
  the warps on the side that crosses the fabric bound the rate: the recv warps where NCCL
  reads from the peer (sm80 over NVLink, paths.cc), else the send warps. A Simple op over
  the fabric moves at most P2P_WARP_GBPS per such warp (fitted, see below), so an all-to-all
  on 8 GPUs, where a channel holds 8 works with one send and one recv warp each, runs below
  the link rate while a SendRecv on 16+ channels of 9 warps nearly fills it.

AlltoAll with S bytes per rank, n ranks, g per node: each GPU moves S(g-1)/n to local
peers over its fabric link and S(n-g)/n to remote peers through ONE rail NIC (PXN: the
data first hops over NVLink to the GPU on the destination's rail, which adds
S(g-1)(N-1)/n NVLink bytes). NCCL cannot aggregate several NICs for one GPU's
all-to-all (nccl-tests#267), hence one NIC per GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import pipeline
from .constants import MAXCHANNELS, PROTOS, NcclConstants, nvlink_per_link
from .shape import CommShape

P2P_LL_THRESHOLD = 16384            # bytes per channel (enqueue.cc)
P2P_PER_BATCH = 8                   # NCCL_MAX_DEV_WORK_P2P_PER_BATCH
P2P_NVL_CHUNK = 512 << 10           # NCCL_P2P_NVL_CHUNKSIZE
P2P_PCI_CHUNK = 128 << 10           # NCCL_P2P_PCI_CHUNKSIZE
P2P_NET_CHUNK = 128 << 10           # NCCL_P2P_NET_CHUNKSIZE
P2P_PER_CHANNEL_NET_BW = 14.0       # GB/s, NCCL_P2P_PER_CHANNEL_NET_BW
LL_EFFICIENCY = 0.5                 # 8 data bytes per 16-byte LL line
P2P_WARPS = 640 // 32               # NCCL_MAX_NTHREADS / WARP_SIZE: warps of a p2p CTA
# GB/s one copying warp of a Simple p2p op moves across the fabric. Fitted, ONE constant on
# ONE point: the 4-GPU H100 AlltoAll of NVIDIA/nccl#2169 (NCCL 2.30.4, 500 MB, 1174.14 us,
# single-points.yaml) by `python -m embsim.collectives.fit_p2p`; every other p2p point and
# curve (A100 read, H100 8-GPU, PCIe boxes) is a prediction.
P2P_WARP_GBPS = 1.48


def _pow2_up(x: int) -> int:
    return 1 << max(0, int(x - 1).bit_length())


@dataclass(frozen=True)
class P2PChannels:
    total: int          # p2pnChannels
    per_peer: int       # p2pnChannelsPerPeer
    chunk: int          # bytes per step on the slowest path used


def p2p_channels(shape: CommShape, consts: NcclConstants, comm_channels: int, peers: int) -> P2PChannels:
    total = min(_pow2_up(min(comm_channels, MAXCHANNELS)), MAXCHANNELS)
    if shape.n_nodes > 1:
        nics = max(1, shape.nics_per_node)
        per = max(nics, math.ceil(shape.nic_bw / P2P_PER_CHANNEL_NET_BW)) if shape.nic_bw > 0 else 2
    elif shape.intra == "pcie":
        per = 2
    else:
        per = 2 * max(1, int(shape.nvlink_bw / nvlink_per_link(consts, shape.arch)))
    per = min(_pow2_up(per), total)
    if shape.n_nodes > 1:
        while per * math.ceil(peers / P2P_PER_BATCH) > total and per > 1:
            per //= 2
    if shape.n_nodes > 1:
        chunk = P2P_NET_CHUNK
    elif shape.intra == "pcie":
        chunk = P2P_PCI_CHUNK
    else:
        chunk = P2P_NVL_CHUNK
    return P2PChannels(total, per, chunk)


def step_us(proto: str, shape: CommShape, consts: NcclConstants) -> float:
    """µs one p2p chunk step costs: pipeline.step_us without the P2P-read round trip."""
    if proto != "Simple":
        return pipeline.step_us(proto, shape, consts)
    return consts.hw_lat[shape.intra_hw]["Ring"][PROTOS.index("Simple")] / pipeline.SLICES_PER_HOP


def _version(consts: NcclConstants) -> tuple[int, int]:
    return tuple(int(p) for p in str(consts.version).split(".")[:2])


def fabric_warps(works: int, consts: NcclConstants, read: bool) -> int:
    """Warps of one work on one channel that move its bytes across the fabric."""
    works = max(1, min(P2P_PER_BATCH, works))
    if _version(consts) < (2, 22):
        groups = _pow2_up(2 * works)
        n_warp = 1
        while n_warp * groups <= P2P_WARPS // 2:
            n_warp *= 2
        recv, send = n_warp, n_warp + (1 if n_warp >= 2 else 0)
    else:
        per = P2P_WARPS // works
        recv = per // 2 if per <= 4 else (per - 1) // 2
        send = recv if per <= 4 else recv + 1
    return max(1, recv if read else send)


def warp_bound_gbps(ops: int, nch: int, total: int, consts: NcclConstants, read: bool) -> float:
    """GB/s `ops` concurrent Simple ops (self-copy included), each on `nch` of `total`
    p2p channels, can move across the fabric, given the warps their channels share."""
    works = math.ceil(ops * nch / max(1, total))
    remote = max(0, ops - 1) if ops > 1 else ops
    return remote * nch * fabric_warps(works, consts, read) * P2P_WARP_GBPS


def op_channels(nbytes: float, ch: P2PChannels, n_ranks: int, multi_node: bool,
                max_channels_4x: bool = False) -> int:
    """Channels one send (or recv) of `nbytes` is split over (enqueue.cc addP2pToPlan).

    Up to 2.19 a single node also caps the split at 4 x p2pnChannels / nRanks channels
    (scheduleP2pTasksToPlan: nChannelsMax halves while nChannelsMax*nRanks > 4*p2pnChannels).
    """
    ch_min = ch_max = ch.per_peer
    while ch_min * n_ranks > ch.total and ch_min > 1:
        ch_min //= 2
    if max_channels_4x and not multi_node:
        while ch_max * n_ranks > 4 * ch.total and ch_max > 1:
            ch_max //= 2
    step = ch.chunk
    min_part = step // 2 if multi_node else step // 8
    max_part = step if multi_node else step * 32
    nch = max(1, min(ch_min, math.ceil(nbytes / min_part)))
    part = max(min_part, math.ceil(nbytes / nch))
    while part > max_part and nch <= ch_max // 2:
        nch *= 2
        part = math.ceil(nbytes / nch)
    return nch


@dataclass(frozen=True)
class P2PTime:
    proto: str
    latency: float        # µs: NCCL's hop latency plus the per-step syncs
    intra_bytes: float    # bytes per GPU over its fabric link (max over GPUs)
    inter_bytes: float    # bytes per GPU through its NIC (max over GPUs)
    intra_bw: float       # GB/s achieved per GPU
    inter_bw: float       # GB/s achieved per NIC
    time: float           # µs
    steps: int = 0        # synchronised chunk steps on the critical path

    @property
    def transfer(self) -> float:
        a = self.intra_bytes / (1000 * self.intra_bw) if self.intra_bytes > 0 else 0.0
        b = self.inter_bytes / (1000 * self.inter_bw) if self.inter_bytes > 0 else 0.0
        return max(a, b)


def p2p_time(shape: CommShape, consts: NcclConstants, intra_bytes: float, inter_bytes: float,
             bytes_per_peer: float, peers: int, channels: int, proto: str | None = None) -> P2PTime:
    """Time of a p2p group given per-GPU bytes per link class (µs, NCCL units)."""
    ch = p2p_channels(shape, consts, channels, peers)
    multi = shape.n_nodes > 1
    nch = op_channels(bytes_per_peer, ch, shape.n_ranks, multi, consts.p2p_max_channels_4x)
    if proto is None:
        proto = "LL" if bytes_per_peer <= nch * P2P_LL_THRESHOLD else "Simple"
    if proto == "LL128":          # p2p has no LL128 path; NCCL falls back to Simple
        proto = "Simple"
    pi = PROTOS.index(proto)
    eff = LL_EFFICIENCY if proto == "LL" else 1.0
    intra_bw = shape.intra_bw * shape.fabric_ratio * eff
    inter_bw = (shape.nic_path_bw or 1e-9) * eff
    in_flight = max(1, ch.total // max(1, nch) * P2P_PER_BATCH)
    rounds = max(1, math.ceil(peers / in_flight))
    if proto == "Simple" and intra_bytes > 0:
        # ops in flight at once, the rank's own copy among them (nccl-tests' alltoall and
        # the p2p schedule's round 0 give every rank a self op beside its peers)
        ops = min(peers, in_flight) + (1 if peers > 1 else 0)
        intra_bw = min(intra_bw, warp_bound_gbps(ops, nch, ch.total, consts, pipeline.p2p_read(shape)))
    step = ch.chunk if proto == "Simple" else pipeline.step_bytes("LL")
    steps = rounds * max(1, math.ceil(bytes_per_peer / (nch * step)))
    hop = consts.hw_lat[shape.intra_hw]["Ring"][pi]
    if inter_bytes > 0:
        hop = max(hop, consts.hw_lat["NET"]["Ring"][pi] + shape.nic_latency_us)
    lat = consts.base_lat["Ring"][pi] + rounds * hop + steps * step_us(proto, shape, consts)
    t = P2PTime(proto, lat, intra_bytes, inter_bytes, intra_bw, inter_bw, 0.0, steps)
    return P2PTime(proto, lat, intra_bytes, inter_bytes, intra_bw, inter_bw, lat + t.transfer, steps)


def alltoall_time(shape: CommShape, consts: NcclConstants, nbytes: float, channels: int,
                  proto: str | None = None) -> P2PTime:
    """nccl-tests alltoall: `nbytes` is the per-rank send buffer (S)."""
    n, g, nn = shape.n_ranks, shape.ppn, shape.n_nodes
    chunk = nbytes / n
    intra = chunk * (g - 1) * nn          # local peers + PXN forwarding for every remote node
    inter = chunk * (n - g)
    return p2p_time(shape, consts, intra, inter, chunk, n - 1, channels, proto)


def sendrecv_time(shape: CommShape, consts: NcclConstants, nbytes: float, channels: int,
                  proto: str | None = None) -> P2PTime:
    """nccl-tests sendrecv: rank r sends `nbytes` to r+1 (ring shift)."""
    if shape.n_ranks == 1:
        return p2p_time(shape, consts, 0.0, 0.0, nbytes, 1, channels, proto)
    crosses = shape.n_nodes > 1
    # The node's last GPU sends off-node; the rest stay on the fabric.
    return p2p_time(shape, consts, nbytes if shape.ppn > 1 else 0.0, nbytes if crosses else 0.0,
                    nbytes, 1, channels, proto)


def alltoallv_time(shape: CommShape, consts: NcclConstants, matrix: np.ndarray, node_of: np.ndarray,
                   channels: int) -> P2PTime:
    """All-to-all-v with matrix[i, j] bytes from rank i to rank j (ranks local to the comm)."""
    m = np.asarray(matrix, dtype=np.float64)
    same = node_of[:, None] == node_of[None, :]
    off = m.copy()
    np.fill_diagonal(off, 0.0)
    local_out = np.where(same, off, 0.0).sum(axis=1)
    local_in = np.where(same, off, 0.0).sum(axis=0)
    remote_out = np.where(same, 0.0, m).sum(axis=1)
    remote_in = np.where(same, 0.0, m).sum(axis=0)
    # PXN forwards each remote byte once over the fabric on the sending node.
    intra = float(max((local_out + remote_out).max(initial=0.0), (local_in + remote_in).max(initial=0.0)))
    inter = float(max(remote_out.max(initial=0.0), remote_in.max(initial=0.0)))
    nz = off[off > 0]
    per_peer = float(nz.max()) if nz.size else 0.0
    peers = int((off > 0).sum(axis=1).max(initial=0))
    return p2p_time(shape, consts, intra if shape.ppn > 1 else 0.0, inter, per_peer, max(1, peers), channels)

"""Send/Recv and AlltoAll: NCCL's p2p path, which its tuning model does not cover (§1.9).

NCCL has no bandwidth/latency table for p2p; its choices are rules, and we follow them:

* channels per peer (paths.cc ncclTopoGetNchannels): an NVLink peer gets
  2 x (path bw / per-link bw) channels, a PCIe peer 2, a network peer (2.29+)
  max(the GPU's local NICs, ceil(NIC bw / 14 GB/s)) -- before 2.29 max(local NICs, 2
  halved while 2 x nRanks > 4 x p2pnChannels); rounded up to a power of two and capped by
  the p2p channel count (pow2Up of the comm's channels); from 2.29, across nodes, halved
  until all nRanks peers fit one round (ncclTopoComputeP2pChannels, p2pMaxPeers).
* a network channel: one proxy connection moves about NCCL_P2P_PER_CHANNEL_NET_BW (14 GB/s,
  the rate NCCL adds channels by to fill a NIC), so a SendRecv across nodes on 1-2 channels
  runs well below the NIC (10 x 1 H100, 2 channels: 24.9 GB/s of a 48 GB/s NIC; nccl#1272:
  sendrecv drops on 8+ nodes as channels per peer shrink).
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
  reads from the peer (sm80 over NVLink, paths.cc), else the send warps.
* a warp's rate, by Little's law: a copy warp (common_kernel.h reduceCopyPacks) issues
  COLL_UNROLL loads of 16 B per lane before it stores any, so COLL_UNROLL x 16 B x 32 lanes
  are in flight per warp (device.h ncclCollUnroll: 8 on sm80+, 6 on sm120, 4 below sm80:
  4, 3 and 2 KiB), and it moves that much per batch time. The batch time is ONE fitted
  constant, in SM cycles (P2P_BATCH_CYCLES), turned into µs by the GPU's boost clock: fitted
  in µs instead, the H100 (write mode, 1980 MHz) value predicts the A100 (read mode,
  1410 MHz) SendRecv 14 % too fast; in cycles it predicts it to ~2 %, so the one A100
  point shows no read-versus-write penalty once the clock is counted. The fitted batch
  (1.79 µs on H100) is longer than a bare load round trip; what holds a warp that long
  (store-path credits, .sys-scope volatile loads) is not established -- it scales with
  the SM clock, which points at the SM side rather than the fabric.
  An all-to-all on 8 GPUs at 8 GiB holds 8 works per channel with one fabric warp each.
* the link: the fabric warps and the link form a closed queue (shared_link_gbps): a warp's
  batch waits for the link, served at link rate, so the rate runs below both n x warp
  rate and the link where they meet (the machine-repairman queue, solved exactly; no
  constant of its own): 16 channels of 10 warps on H100 get ~0.94 of the link, not 1.
* across nodes the GPU's send/recv warps and the net proxy are joined by the same FIFO
  (NCCL_STEPS slots, net.cc send/recvProxyProgress): while the network carries the other
  steps in flight, the warps' per-step flag/fence work is off the critical path, so a
  network-bound op costs max(syncs + fabric time, network time), not their sum.
* fill: a part moves through the FIFO in steps, written by one side and copied out by the
  other, so the part pays one step more than its data: (steps + 1) step times at the
  achieved rate -- the ~25-35 µs intercept of the H100 SendRecv and AlltoAll curves at
  32-128 MiB (one 512 KiB step at ~20 GB/s per channel, ~13 GB/s per all-to-all part).

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
from .constants import MAXCHANNELS, PROTOS, NcclConstants, nvlink_per_link, version_key
from .shape import CommShape
from .traffic import busiest_node_bytes

P2P_LL_THRESHOLD = 16384            # bytes per channel (enqueue.cc)
P2P_PER_BATCH = 8                   # NCCL_MAX_DEV_WORK_P2P_PER_BATCH
P2P_NVL_CHUNK = 512 << 10           # NCCL_P2P_NVL_CHUNKSIZE
P2P_PCI_CHUNK = 128 << 10           # NCCL_P2P_PCI_CHUNKSIZE
P2P_NET_CHUNK = 128 << 10           # NCCL_P2P_NET_CHUNKSIZE
P2P_PER_CHANNEL_NET_BW = 14.0       # GB/s, NCCL_P2P_PER_CHANNEL_NET_BW
LL_EFFICIENCY = 0.5                 # 8 data bytes per 16-byte LL line
P2P_WARPS = 640 // 32               # NCCL_MAX_NTHREADS / WARP_SIZE: warps of a p2p CTA
WARP_SIZE = 32
PACK_BYTES = 16                     # reduceCopy's BigPackSize: one 16-byte load per lane
# SM cycles a batch of COLL_UNROLL packs of a fabric-crossing copy warp is in flight.
# Fitted, ONE constant on ONE curve: the 8-GPU H100 SendRecv of xxrjun/nccl-tests-cluster
# (NCCL 2.29.2, validation_data/h100-slurm-1x8-sendrecv.yaml; least mean |error| over its
# points on a 10-cycle grid) by `python -m embsim.collectives.fit_p2p`, where the warps
# bind at 32-256 MiB (4, 8, 16 channels of 10 send warps). Every other p2p point and curve
# (A100 read mode, AlltoAll, 4 GPUs, nccl#2169) is a prediction.
P2P_BATCH_CYCLES = 3530
# The clock a topology file without gpu.clock_mhz is taken at: the fit curve's H100 SXM.
REFERENCE_CLOCK_MHZ = 1980.0


def _pow2_up(x: int) -> int:
    return 1 << max(0, int(x - 1).bit_length())


@dataclass(frozen=True)
class P2PChannels:
    total: int          # p2pnChannels
    per_peer: int       # p2pnChannelsPerPeer
    chunk: int          # bytes per step on the slowest path used


def local_nics(shape: CommShape) -> int:
    """NICs next to one GPU (topo.cc ncclTopoGetLocalNetCountByBw): the node's NICs its
    GPUs share evenly, at least one -- a DGX H100 GPU has 1 of the 8, not 8."""
    return max(1, shape.nics_per_node // max(1, shape.ppn))


def _local_net_bw(shape: CommShape) -> tuple[int, float]:
    """(NICs, GB/s) of a GPU's local NICs as topo.cc getLocalNetCountByBw adds them: each at
    its GPU -> NIC path bandwidth (the slower of the NIC and the PCIe hop: a 800 Gb/s NIC
    behind a Gen5 x16 hop counts 48, not 100: sized from the raw NIC, an AlltoAll across
    nodes got slower on a faster NIC), stopping once they reach the GPU's own link to its CPU."""
    gpu = shape.gpu_link_bw or math.inf          # NVLink-C2C: wider than any NICs
    count, total = 0, 0.0
    for _ in range(local_nics(shape)):
        total += shape.nic_path_bw
        count += 1
        if total >= gpu:
            break
    return count, total


def net_channels_per_peer(shape: CommShape, consts: NcclConstants, total: int) -> int:
    """Channels per network peer (paths.cc ncclTopoGetNchannels, remote rank).

    2.29+: max(NICs counted, ceil(their bandwidth / P2P_PER_CHANNEL_NET_BW)), the NICs and
    bandwidth as topo.cc getLocalNetCountByBw counts them (_local_net_bw). Before: max(local
    NICs, 2 halved while 2 x nRanks > 4 x p2pnChannels) ("reduce with scale").
    """
    if _version(consts) >= (2, 29):
        if shape.nic_bw <= 0:
            return 2
        count, bw = _local_net_bw(shape)
        return max(count, math.ceil(int(bw) / int(P2P_PER_CHANNEL_NET_BW)))
    ch_max = 2
    while ch_max * shape.n_ranks > 4 * total and ch_max > 1:
        ch_max //= 2
    return max(local_nics(shape), ch_max)


def p2p_channels(shape: CommShape, consts: NcclConstants, comm_channels: int, peers: int) -> P2PChannels:
    total = min(_pow2_up(min(comm_channels, MAXCHANNELS)), MAXCHANNELS)
    if shape.n_nodes > 1:
        per = net_channels_per_peer(shape, consts, total)
    elif shape.intra == "pcie":
        per = 2
    else:
        per = 2 * max(1, int(shape.nvlink_bw / nvlink_per_link(consts, shape.arch)))
    per = min(_pow2_up(per), total)
    if shape.n_nodes > 1 and _version(consts) >= (2, 29):
        # 2.29+ ncclTopoComputeP2pChannels: across nodes, halve until every possible peer
        # (p2pMaxPeers = nRanks) fits one round of p2pnChannels
        while per * math.ceil(shape.n_ranks / P2P_PER_BATCH) > total and per > 1:
            per //= 2
    # the run's NCCL_P2P_*_CHUNKSIZE (default P2P_*_CHUNK; nccl_env.apply_env)
    if shape.n_nodes > 1:
        chunk = consts.p2p_chunk["net"]
    elif shape.intra == "pcie":
        chunk = consts.p2p_chunk["pci"]
    else:
        chunk = consts.p2p_chunk["nvl"]
    return P2PChannels(total, per, chunk)


def step_us(proto: str, shape: CommShape, consts: NcclConstants) -> float:
    """µs one p2p chunk step costs: pipeline.step_us without the P2P-read round trip."""
    if proto != "Simple":
        return pipeline.step_us(proto, shape, consts)
    return consts.hw_lat[shape.intra_hw]["Ring"][PROTOS.index("Simple")] / pipeline.SLICES_PER_HOP


def _version(consts: NcclConstants) -> tuple[int, int]:
    return version_key(consts.version)


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


def coll_unroll(arch: int) -> int:
    """device.h ncclCollUnroll: the copy loop's unroll per architecture."""
    if arch < 80:
        return 4
    return 6 if arch // 10 == 12 else 8


def bytes_in_flight(arch: int) -> int:
    """Bytes one copy warp has in flight: COLL_UNROLL 16-byte packs per lane."""
    return coll_unroll(arch) * PACK_BYTES * WARP_SIZE


def warp_gbps(shape: CommShape) -> float:
    """GB/s one fabric-crossing Simple copy warp moves: bytes in flight / batch time."""
    in_flight = bytes_in_flight(shape.arch)
    batch_us = P2P_BATCH_CYCLES / (shape.sm_clock_mhz or REFERENCE_CLOCK_MHZ)
    return in_flight / batch_us / 1e3


def fabric_warp_count(ops: int, nch: int, total: int, consts: NcclConstants, read: bool) -> int:
    """Warps moving bytes across the fabric when `ops` concurrent Simple ops (self-copy
    included) each run on `nch` of `total` p2p channels."""
    works = math.ceil(ops * nch / max(1, total))
    remote = max(0, ops - 1) if ops > 1 else ops
    return remote * nch * fabric_warps(works, consts, read)


def warp_bound_gbps(ops: int, nch: int, total: int, consts: NcclConstants, read: bool,
                    rate: float) -> float:
    """GB/s those warps move at `rate` GB/s each with the link out of the way."""
    return fabric_warp_count(ops, nch, total, consts, read) * rate


def shared_link_gbps(n_warps: int, rate: float, link: float, in_flight: int) -> float:
    """GB/s `n_warps` warps move through one link of `link` GB/s when each alone moves
    `rate` GB/s, a batch of `in_flight` bytes at a time.

    Little's law for the closed system the warps and the link form: a warp's batch is in
    flight Z = B/rate - S, then queues for the link, which serves it in S = B/link. That is
    the machine-repairman queue; its exact throughput is (1 - p0)/S batches per µs with p0
    = 1 / sum_k n!/(n-k)! (S/Z)^k (the Erlang B formula with n servers and load Z/S). It
    tends to n x rate with few warps and to the link rate with many, and runs below both
    near n = (Z+S)/S, where the batches start to queue. No constant of its own.
    """
    if n_warps <= 0:
        return 0.0
    if link <= 0 or rate <= 0:
        return min(link, n_warps * rate)
    s_us = in_flight / (1e3 * link)
    z_us = in_flight / (1e3 * rate) - s_us
    if z_us <= 0:
        return link
    k = np.arange(n_warps + 1, dtype=np.float64)
    log_t = np.concatenate(([0.0], np.cumsum(np.log(n_warps - k[:-1])))) + k * math.log(s_us / z_us)
    top = float(log_t.max())
    p0 = math.exp(-top) / float(np.exp(log_t - top).sum())
    return (1.0 - p0) / s_us * in_flight / 1e3


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
             bytes_per_peer: float, peers: int, channels: int, proto: str | None = None,
             nic_share: float = 1.0) -> P2PTime:
    """Time of a p2p group given per-GPU bytes per link class (µs, NCCL units). `nic_share`:
    the part of a NIC one GPU's off-node traffic gets while the node's other senders use it
    too (1: a NIC to itself)."""
    ch = p2p_channels(shape, consts, channels, peers)
    multi = shape.n_nodes > 1
    nch = op_channels(bytes_per_peer, ch, shape.n_ranks, multi, consts.p2p_max_channels_4x)
    if proto is None:
        proto = "LL" if bytes_per_peer <= nch * P2P_LL_THRESHOLD else "Simple"
    if proto == "LL128":          # p2p has no LL128 path; NCCL falls back to Simple
        proto = "Simple"
    pi = PROTOS.index(proto)
    eff = LL_EFFICIENCY if proto == "LL" else 1.0
    intra_bw = shape.host_staged_bw(shape.intra_bw * shape.fabric_ratio * eff)
    in_flight = max(1, ch.total // max(1, nch) * P2P_PER_BATCH)
    # One p2p channel's proxy connection moves about P2P_PER_CHANNEL_NET_BW over the network
    # (NCCL sizes its net channels by that rate); the GPU's NIC carries what its ops'
    # channels together move, at most the NIC.
    net_ch = min(ch.total, nch * min(peers, in_flight))
    inter_bw = (min(shape.nic_path_bw * nic_share, net_ch * P2P_PER_CHANNEL_NET_BW) or 1e-9) * eff
    rounds = max(1, math.ceil(peers / in_flight))
    if proto == "Simple" and intra_bytes > 0:
        # ops in flight at once, the rank's own copy among them (nccl-tests' alltoall and
        # the p2p schedule's round 0 give every rank a self op beside its peers)
        ops = min(peers, in_flight) + (1 if peers > 1 else 0)
        warps = fabric_warp_count(ops, nch, ch.total, consts, pipeline.p2p_read(shape))
        intra_bw = shared_link_gbps(warps, warp_gbps(shape), intra_bw, bytes_in_flight(shape.arch))
    step = ch.chunk if proto == "Simple" else pipeline.step_bytes("LL")
    part_steps = max(1, math.ceil(bytes_per_peer / (nch * step)))
    steps = rounds * part_steps
    hop = consts.hw_lat[shape.intra_hw]["Ring"][pi]
    if inter_bytes > 0:
        hop = max(hop, consts.hw_lat["NET"]["Ring"][pi] + shape.nic_latency_us)
    # The warps that wait on a step's flags and fence are the ones that copy: every step's
    # sync is in series with its data -- over the fabric. Across nodes the proxy drains the
    # FIFO while the warps sync, so the syncs hide behind the network time where it is longer. (Letting other channels fill the link while one
    # syncs fits the H100 SendRecv above 512 MiB better, 2.9 -> 0.8 %, but makes every
    # AlltoAll and nccl#2169 worse, 1.2 -> 5.9 %: all-to-all pays its syncs.)
    sync = steps * step_us(proto, shape, consts)
    t = P2PTime(proto, 0.0, intra_bytes, inter_bytes, intra_bw, inter_bw, 0.0, steps)
    hidden = 0.0
    if inter_bytes > 0:
        intra_us = intra_bytes / (1000 * intra_bw) if intra_bytes > 0 else 0.0
        inter_us = inter_bytes / (1000 * inter_bw)
        hidden = min(sync, max(0.0, inter_us - intra_us))
    lat = consts.base_lat["Ring"][pi] + rounds * hop + sync - hidden
    lat += t.transfer / part_steps      # FIFO fill: every round's parts run one step longer
    return P2PTime(proto, lat, intra_bytes, inter_bytes, intra_bw, inter_bw, lat + t.transfer, steps)


def alltoall_time(shape: CommShape, consts: NcclConstants, nbytes: float, channels: int,
                  proto: str | None = None) -> P2PTime:
    """nccl-tests alltoall: `nbytes` is the per-rank send buffer (S)."""
    n, g, nn = shape.n_ranks, shape.ppn, shape.n_nodes
    chunk = nbytes / n
    intra = chunk * (g - 1) * nn          # local peers + PXN forwarding for every remote node
    inter = chunk * (n - g)
    # Every GPU of the node sends off-node at once: with fewer NICs than GPUs (AWS p4d: 4 EFA
    # devices for 8 GPUs, DGX-1: 4 for 8) a GPU's remote bytes get its share of the node's NICs
    return p2p_time(shape, consts, intra, inter, chunk, n - 1, channels, proto,
                    nic_share=node_nic_share(shape, inter, g * inter))


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
    return p2p_time(shape, consts, intra if shape.ppn > 1 else 0.0, inter, per_peer, max(1, peers), channels,
                    nic_share=node_nic_share(shape, inter, busiest_node_bytes(node_of, remote_out, remote_in)))


def node_nic_share(shape: CommShape, inter: float, node_bytes: float) -> float:
    """The part of a NIC the busiest GPU's off-node bytes (`inter`) get when its node's GPUs
    send at once over fewer NICs than GPUs, as alltoall_time: the busiest node's off-node
    bytes (`node_bytes`, out or in) over its NICs take node_bytes / (nics x B), the GPU's
    alone inter / B, and the slower sets the time, so share = min(1, inter x nics /
    node_bytes) (uniform traffic: nics / GPUs)."""
    nics = shape.nics_per_node
    if nics <= 0 or inter <= 0 or node_bytes <= 0:
        return 1.0
    return min(1.0, inter * nics / node_bytes)

"""Send/Recv and AlltoAll: NCCL's p2p path, which its tuning model does not cover (§1.9).

NCCL has no bandwidth/latency table for p2p, so we build one from the same facts the
collective model uses: the link bandwidths NCCL's topology assigns (NVLink count x
per-link constant, PCIe width x speed, NIC Gb/s / 8), the LL protocol's 50 % data
efficiency below the LL threshold, and the per-step latencies of the hwLat table.

AlltoAll with S bytes per rank, n ranks, g per node: each GPU moves S(g-1)/n to local
peers over its fabric link and S(n-g)/n to remote peers through ONE rail NIC (PXN:
the data first hops over NVLink to the GPU on the destination's rail, which adds
S(g-1)(N-1)/n NVLink bytes). NCCL cannot aggregate several NICs for one GPU's
all-to-all (nccl-tests#267), hence one NIC per GPU.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .constants import NcclConstants, PROTOS
from .shape import CommShape

P2P_LL_THRESHOLD = 16384            # bytes per channel (enqueue.cc 859)
P2P_PER_BATCH = 8                   # NCCL_MAX_DEV_WORK_P2P_PER_BATCH (peers per round)
LL_EFFICIENCY = 0.5                 # 8 data bytes per 16-byte LL line


@dataclass(frozen=True)
class P2PTime:
    proto: str
    latency: float        # µs
    intra_bytes: float    # bytes per GPU over its fabric link (max over GPUs)
    inter_bytes: float    # bytes per GPU through its NIC (max over GPUs)
    intra_bw: float       # GB/s achieved per GPU
    inter_bw: float       # GB/s achieved per NIC
    time: float           # µs

    @property
    def transfer(self) -> float:
        a = self.intra_bytes / (1000 * self.intra_bw) if self.intra_bytes > 0 else 0.0
        b = self.inter_bytes / (1000 * self.inter_bw) if self.inter_bytes > 0 else 0.0
        return max(a, b)


def channels_per_peer(channels: int, peers: int) -> int:
    """p2p channels one peer gets: p2pnChannels (a power of two <= comm channels) shared
    by the peers of one batch (paths.cc ~918-1000, simplified to an even split)."""
    p2p = 1 << (max(1, channels).bit_length() - 1)
    return max(1, p2p // max(1, min(peers, P2P_PER_BATCH)))


def _proto(bytes_per_peer: float, channels: int, peers: int) -> str:
    ll = bytes_per_peer <= channels_per_peer(channels, peers) * P2P_LL_THRESHOLD
    return "LL" if ll else "Simple"


def p2p_time(shape: CommShape, consts: NcclConstants, intra_bytes: float, inter_bytes: float,
             bytes_per_peer: float, peers: int, channels: int, proto: str | None = None) -> P2PTime:
    """Time of a p2p group given per-GPU bytes per link class (µs, NCCL units)."""
    proto = proto or _proto(bytes_per_peer, channels, peers)
    if proto == "LL128":          # p2p has no LL128 path; NCCL falls back to Simple
        proto = "Simple"
    pi = PROTOS.index(proto)
    eff = LL_EFFICIENCY if proto == "LL" else 1.0
    intra_bw = shape.intra_bw * eff
    inter_bw = (shape.nic_path_bw or 1e-9) * eff
    rounds = max(1, math.ceil(peers / P2P_PER_BATCH))
    step = consts.hw_lat[shape.intra_hw]["Ring"][pi]
    if inter_bytes > 0:
        step = max(step, consts.hw_lat["NET"]["Ring"][pi] + shape.nic_latency_us)
    lat = consts.base_lat["Ring"][pi] + rounds * step
    t = P2PTime(proto, lat, intra_bytes, inter_bytes, intra_bw, inter_bw, 0.0)
    return P2PTime(proto, lat, intra_bytes, inter_bytes, intra_bw, inter_bw, lat + t.transfer)


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

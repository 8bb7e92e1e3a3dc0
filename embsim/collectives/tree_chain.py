"""Tree/Simple inside a node: store-and-forward chunks up and down rotated chains.

NCCL's tree inside a node is a chain of its GPUs per channel (connect.cc ncclTopoPreset:
tree.up / tree.down[0] from the tree graph's intra order), and a Simple tree step is ONE
slice of the whole chunk (ProtoSimple<1, 1>, prims_simple.h sliceSize = the chunk): a GPU
forwards a chunk up (reduced) or down only once all of it arrived. runTreeSplit runs the
reduce-up and broadcast-down warps at once, so after the first chunk every GPU may send one
chunk up and one down per channel at a time, over the same NVLink/PCIe egress.

Which GPU each channel's chain starts at decides how many channels share a hop's link
while the first chunks climb. NCCL's tree search (search.cc ncclTopoCompute) first replays
channel 0's GPU order for every channel (sameChannels) within 256 recursion steps; a
channel costs one step a GPU plus three, so 8-GPU nodes get every channel on ONE order
(the built-against A3 Mega 2 x 8 Tree/Simple curve fits it, 5.4 %) while a 64-GPU MNNVL
rack gets 3 and falls to the second search, which starts each channel at its own NIC's
GPU: rotations, channel c's head on GPU c (`chain_starts`), running up or down the GPU
index as the head's NIC-sharing neighbour lies (`_positions`). Not settled: the replay
can also stop where the head reaches no further NIC at the search's path type, which
would rotate A3 Mega's chains too (16.8 % there); the model tests the budget only.

The pipeline is taken in lockstep rounds: in round t the GPU at chain position p (0 = the
leaf, D = ppn - 1 the head) sends chunk t - p up and chunk t - (2D - p) down; a round lasts
as long as its most loaded GPU needs for its sends at its link bandwidth, and at least one
chunk at one channel's rate (NCCL's perChMaxTreeBw: what one channel's warps move).
`chain_fill` is what these rounds take beyond the steady rounds the transfer already
charges. No constant is fitted.
"""

from __future__ import annotations

import numpy as np


def _positions(ppn: int, starts: int, local: int = 1) -> np.ndarray:
    """(ppn, starts) chain position of every GPU in each rotation, 0 = leaf, ppn - 1 = head.

    Rotation c's head is GPU c: NCCL's NIC list holds GPU 0's NIC, then GPU 1's, ...
    (search.cc ncclTopoPrefNetsGpuFirst / ChannelFirst with one NIC a GPU) and channel c
    starts at its NIC's local GPU (ncclTopoSearchRecNet). On an NVSwitch the chain then
    walks index neighbours (ncclTopoSearchNextGpuSort tries only GPU+1 and GPU-1). A
    BALANCED_TREE channel's second GPU must also reach the head's NIC at the search's path
    type, so with NICs shared by `local` consecutive GPUs (a Grace's two B200s) the head's
    last GPU of its group turns the chain downwards and the others upwards; `local` = 1:
    no neighbour qualifies, the search relaxes the path type and every chain goes the
    same way."""
    heads = np.arange(starts) % ppn
    gpus = np.arange(ppn)[:, None]
    down = (ppn - 1) - (heads[None, :] - gpus) % ppn
    if local <= 1:
        return down
    up = (ppn - 1) - (gpus - heads[None, :]) % ppn
    return np.where((heads % local < local - 1)[None, :], up, down)


def chain_rounds_us(chunk: float, chunks: int, ppn: int, channels: int, starts: int,
                    link_bw: float, per_channel_bw: float, local: int = 1) -> float:
    """µs the lockstep rounds of `chunks` chunks (bytes `chunk` per channel) take up and
    down a `ppn`-GPU chain, `channels` channels over `starts` rotations."""
    d = ppn - 1
    if d <= 0 or chunks <= 0 or link_bw <= 0:
        return 0.0
    pos = _positions(ppn, starts, local)
    per_rotation = channels / starts
    floor = chunk / (1000.0 * per_channel_bw) if per_channel_bw > 0 else 0.0
    total = 0.0
    # rounds whose load pattern repeats (every GPU busy in every rotation) are counted once
    steady_from, steady_to = 2 * d, chunks - 1
    rounds = 2 * d + chunks - 1
    t = 0
    while t < rounds:
        up = (pos <= d - 1) & (t - pos >= 0) & (t - pos <= chunks - 1)
        down_k = t - (2 * d - pos)
        down = (pos >= 1) & (down_k >= 0) & (down_k <= chunks - 1)
        load = per_rotation * (up.sum(axis=1) + down.sum(axis=1)).max()
        dur = max(floor, chunk * load / (1000.0 * link_bw))
        if steady_from <= t < steady_to:
            total += dur * (steady_to - t)
            t = steady_to
            continue
        total += dur
        t += 1
    return total


def chain_fill(chunk: float, chunks: int, ppn: int, channels: int, starts: int,
               link_bw: float, per_channel_bw: float, local: int = 1) -> float:
    """µs the chain's rounds take beyond `chunks` steady rounds (each GPU sending one chunk
    up and one down on every channel): the fill and drain of the store-and-forward chain."""
    if ppn <= 1 or chunks <= 0 or link_bw <= 0:
        return 0.0
    steady = max(chunk / (1000.0 * per_channel_bw) if per_channel_bw > 0 else 0.0,
                 chunk * 2 * channels / (1000.0 * link_bw))
    return max(0.0, chain_rounds_us(chunk, chunks, ppn, channels, starts, link_bw, per_channel_bw,
                                    local) - chunks * steady)


# search.cc: the first tree search replays the first channel's GPU order for every channel
# (sameChannels = 1) within NCCL_SEARCH_TIMEOUT_SAMECHANNELS recursion steps; only if
# that search is not perfect does a second one (sameChannels = 0, NCCL_SEARCH_TIMEOUT_TREE)
# start each channel afresh at its own NIC.
SEARCH_TIMEOUT_SAMECHANNELS = 1 << 8


def replay_steps(ppn: int) -> int:
    """ncclTopoSearchRecGpu calls one BALANCED_TREE channel costs: one a GPU, one for each
    of the two NIC returns (steps 0 and 1), one to close the channel."""
    return ppn + 3


def chain_starts(ppn: int, channels: int, nics: int) -> int:
    """Distinct chain orders NCCL's tree channels take inside a node: 1 when the replayed
    search covers all `channels` graph channels within its budget, else one rotation per
    channel that has a NIC GPU of its own (at most `nics` and `ppn`)."""
    if ppn <= 1 or channels <= 1:
        return 1
    if SEARCH_TIMEOUT_SAMECHANNELS // replay_steps(ppn) >= channels:
        return 1
    return max(1, min(channels, nics, ppn))

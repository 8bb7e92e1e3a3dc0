"""CollNet AllReduce (in-network reduction: InfiniBand SHARP through NCCL's collnet plugin):
what the CollNetDirect and CollNetChain kernels move, and their pipeline time.

Both kernels (src/device/all_reduce.h, RunWorkColl<AllReduce, ..., COLLNET_DIRECT |
COLLNET_CHAIN, SIMPLE>, the same structure 2.18-2.30) reduce a node's data over NVLink to
its heads, whose NICs hand the node's partial sums to the network; the switches reduce
them across nodes (SHARP) and return the sum, which the heads spread back over NVLink:
  * Direct: every GPU scatters its data to the heads, 1/heads of it to each (scatter warps,
    FanAsymmetric<0, 7>); each head reduces its part from all local GPUs and sends it to the
    network (reduce warps, recvReduceDirectSend), receives the sum (bcast warps) and writes
    it to every local GPU; every GPU gathers the parts from the heads (gather warps). A loop
    moves channels x heads x chunk (ProtoSimple<1, 1>: one step a chunk).
  * Chain: the node's GPUs form a chain per channel (the collnet chain graph, pattern TREE)
    whose head holds the NIC: the partial sum climbs the chain (directRecvReduceDirectSend),
    the head sends it to the network, and the sum comes back down the chain, half the
    threads on each direction (as runTreeSplit).
The network stage is where SHARP differs from a ring or a tree: each head's NIC sends its
share of the message once up and receives the reduced share once down, whatever the node
count -- no 2(n-1)/n factor and no tree depth in bytes. The aggregation tree's depth is a
latency: a share climbs the switch tiers over the communicator's nodes and the result comes
back down them (CommShape.sharp_tiers x the file's switch latency).

[ASSUMPTION] the switches reduce at the NICs' line rate (no SHARP reduction rate is in
NCCL's source or the topology file), and the SHARP plugin's own handling of a message costs
what NCCL's proxy costs a network send (PROXY_HANDOFF_US). Nothing here is fitted.
"""

from __future__ import annotations

import math

from .channels import collnet_heads, runtime_fraction, runtime_lanes
from .constants import NCCL_STEPS, NcclConstants, arch_family, constants_for
from .multinode import PROXY_HANDOFF_US
from .nccl_model import COLLNET, net_overhead_us
from .pipeline import PipelineTime, step_us
from .tree_chain import chain_fill, chain_starts

# perChMaxTreeBws of the newest table, one node: what one channel's split warps copy along a
# chain (the Tree kernel's figure, taken for the CollNetChain kernel's identical split: NCCL
# has no CollNet per-channel figure)
KERNEL_PER_CH_CHAIN = constants_for(None).per_ch_tree


def _link(shape) -> float:
    """A GPU's NVLink rate per direction, GB/s: NCCL's per-link figure x the file's ratio."""
    return shape.intra_bw * shape.fabric_ratio


def direct_link_load(ppn: int, heads: int) -> float:
    """Bytes the busiest GPU's fabric link carries each way per byte of message in
    CollNetDirect: a head scatters the other heads their parts of its data ((heads-1)/heads)
    and broadcasts its reduced part to every other GPU ((ppn-1)/heads), and receives as
    much; a GPU that heads nothing scatters all of its data to the heads and gathers all of
    the result (1 each way). 8 GPUs, 8 heads: 1.75."""
    if ppn <= 1:
        return 0.0
    head = ((heads - 1) + (ppn - 1)) / heads
    return max(head, 1.0) if heads < ppn else head


def net_nics(algo: str, shape, graphs) -> int:
    """NICs a node's CollNet traffic leaves by: Direct one per head; Chain one per distinct
    chain head (channel c starts at NIC c, search.cc), at most the node's NICs."""
    if algo == "CollNetDirect":
        return collnet_heads(shape)
    chain = graphs.collnet_chain
    n = chain.n_channels if chain is not None else 1
    return max(1, min(max(1, shape.nics_per_node), n))


def kernel_bw(algo: str, shape, graphs) -> float:
    """AllReduce algBw (GB/s) the kernel moves: the slower of the node's fabric stage and the
    network stage (each NIC carries its share once each way: nics x the NIC path). Direct:
    the busiest link's load (direct_link_load); Chain: every GPU of a chain sends each byte
    twice over its link -- the partial sum up, the result down (as Tree/Simple in a node)."""
    net = net_nics(algo, shape, graphs) * shape.nic_path_bw
    if shape.ppn <= 1:
        return net
    load = direct_link_load(shape.ppn, collnet_heads(shape)) if algo == "CollNetDirect" else 2.0
    return min(net, _link(shape) / load)


def chunk_bytes(algo: str, nbytes: float, channels: int, heads: int, ppn: int,
                consts: NcclConstants) -> int:
    """enqueue.cc's CollNet chunk (2.18-2.30 alike): Direct a Simple step, halved while a
    channel x heads has fewer than depth x 64 chunks (floor 128 KiB), depth x 8 (64 KiB, then
    32 KiB), depth = 2 with local peers (connect.cc); Chain min(256 KiB, a Simple step),
    halved below depth x 64, x 8, x 1 chunks per channel (128, 64, 32 KiB), depth = ppn."""
    step = consts.buff_bytes["Simple"] // NCCL_STEPS
    if algo == "CollNetDirect":
        depth = 2 if ppn > 1 else 1
        per, chunk = channels * heads, step
        rules = ((depth * 64, 131072), (depth * 8, 65536), (depth * 8, 32768))
    else:
        depth = ppn
        per, chunk = channels, min(256 * 1024, step)
        rules = ((depth * 64, 131072), (depth * 8, 65536), (depth, 32768))
    for mult, floor in rules:
        while nbytes // (per * chunk) < mult and chunk > floor:
            chunk //= 2
    return chunk


def sharp_round_trip_us(shape) -> float:
    """µs the aggregation tree adds to a chunk's network round trip beyond the leaf
    traversal NCCL's latency already carries (kernel_view: the file's NIC + one switch,
    up and, as the flush term, down): the tiers above the leaf, up and down."""
    return 2 * max(0, shape.sharp_tiers - 1) * shape.switch_latency_us


def collnet_time(algo: str, nbytes: float, shape, graphs, consts: NcclConstants,
                 nccl_latency: float, bandwidth: float) -> PipelineTime:
    """The pipeline time of a CollNet AllReduce: NCCL's latency (its fill, paid once) plus
    the aggregation tree's depth, one synchronised step per loop where a loop's data is
    shorter than the handshake (stages overlap: scatter/reduce, network up, network down,
    broadcast/gather), the transfer at `bandwidth` (kernel_bw) on the channels NCCL
    launches, and the fill and drain of the stages that are not the bottleneck.

    A network crossing is store-and-forward: the proxy hands a step to the plugin once the
    GPU wrote all of it, so each direction adds a loop's share at the NICs' rate plus the
    proxy hand-off (as multinode.tree_net_fill, 2 crossings: up to the switch, down from it).
    Chain: the in-node stages are the chain's store-and-forward hops up and down
    (tree_chain.chain_fill, as Tree/Simple); Direct: one NVLink stage each way.
    """
    if algo not in COLLNET:
        raise ValueError(f"collnet_time: {algo} is not a CollNet algorithm")
    heads = collnet_heads(shape)
    nc, _ = runtime_lanes(nbytes, algo, "Simple", shape.n_ranks, graphs.comm_channels, heads)
    frac = runtime_fraction(nbytes, algo, "Simple", shape.n_ranks, graphs, heads)
    rate = bandwidth * frac
    per_loop = heads if algo == "CollNetDirect" else 1
    chunk = chunk_bytes(algo, nbytes, nc, heads, shape.ppn, consts)
    loop = nc * per_loop * chunk
    loops = max(1, int(math.ceil(nbytes / loop)))
    rest = nbytes - (loops - 1) * loop
    full, last = loop / (1000.0 * rate), rest / (1000.0 * rate)
    transfer = (loops - 1) * full + last
    # a step through the network is launched by the proxy (tuning.cc getNetOverhead x3 for
    # Simple, as the Tree's steps across nodes); in the node, NCCL's per-slice handshake
    sync = max(step_us("Simple", shape, consts), net_overhead_us(shape) * 3)
    idle = (loops - 1) * max(0.0, sync - full) + max(0.0, sync - last)
    first = min(loop, nbytes)
    # Direct: every channel runs every head; Chain: a channel leaves by its own head's NIC
    nics = net_nics(algo, shape, graphs) if algo == "CollNetDirect" else min(nc, net_nics(algo, shape, graphs))
    t_net = max(first / (1000.0 * nics * shape.nic_path_bw), sync) + PROXY_HANDOFF_US
    if algo == "CollNetDirect":
        if shape.ppn > 1:
            t_in = max(first * direct_link_load(shape.ppn, heads) / 2 / (1000.0 * _link(shape)), sync)
        else:
            t_in = 0.0
        fill = max(0.0, 2 * t_in + 2 * t_net - first / (1000.0 * rate))
    else:
        c = min(chunk, nbytes / nc)
        per_ch = KERNEL_PER_CH_CHAIN[arch_family(shape.arch)][0]
        starts = chain_starts(shape.ppn, graphs.collnet_chain.n_channels, shape.nics_per_node)
        fill = 2 * t_net + chain_fill(c, max(1, int(math.ceil(nbytes / (nc * chunk)))), shape.ppn,
                                      nc, starts, _link(shape), per_ch, shape.nic_local_gpus)
    latency = nccl_latency + sharp_round_trip_us(shape) + idle + fill
    return PipelineTime(latency, transfer, loops, loops, chunk)

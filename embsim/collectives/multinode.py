"""What the kernels deliver across nodes, where NCCL's tuning table is only a steering value.

NVLSTree (src/device/all_reduce.h, RunWorkColl<..., NCCL_ALGO_NVLS_TREE>) reduces a node's
data through the NVSwitch (NVLS scatter -> multimem reduce -> gather) and sends each head's
share up a tree over the network, one NIC per head, then broadcasts it back down. Its data
path is therefore bounded by two things the kernel really moves:
  * inside a node: the same NVLS pipeline a one-node NVLS AllReduce runs (its algBw);
  * across nodes: each head's NIC carries the node-reduced share once up and once down; on
    two nodes that is the whole message once per direction over the heads' NICs, on more
    nodes an inner tree node also feeds two children (NCCL's own bwInter/2, tuning.cc).
NCCL's table (min(bwIntra, bwInter) x nChannels x 5/6 up to 2.27) prices the graph search's
per-channel speed, which on NICs slower than the speed array's steps (48 -> 86 GB/s on
sm100) leaves a third of the wire unused; the kernel is not held to that step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .constants import NcclConstants, arch_family, constants_for
from .shape import CommShape


# µs the net proxy's hand-off adds to every network crossing of a chunk that NCCL's
# hwLat[NET] (an empty step's cost in its tuning table) does not: the sending GPU's last line
# must reach the proxy's buffer over PCIe and be seen by its polling loop (net.cc
# sendProxyProgress scans the step's flags / waits on the tail), the proxy posts the send
# (isend), and the receiving side's completion reaches the GPU polling over PCIe
# (recvProxyProgress / the LL lines in host memory). NCCL documents no figure for it.
# FITTED: one value for every protocol, on ONE curve -- the Nebius 2x8 H100 InfiniBand
# AllReduce (validation_data/nebius-h100-2node-allreduce.yaml), its Tree/LL and Tree/LL128
# points >= 64 KiB, by `python -m embsim.collectives.fit_net` (0.5 µs grid, least mean
# |error|). Every other multi-node curve (B200 over IB, H100 over EFA, ...) is a prediction.
PROXY_HANDOFF_US = 5.5


def ring_messages_per_step(proto: str) -> int:
    """Network messages the proxy hands off per ring step: one isend per slice (net.cc
    sendProxyProgress: `transmitted += sliceSteps`); a Simple ring step is a chunk of
    ALLREDUCE_CHUNKSTEPS / ALLREDUCE_SLICESTEPS = 2 slices, an LL / LL128 step is one."""
    return 2 if proto == "Simple" else 1


@dataclass(frozen=True)
class RingStepFloor:
    """The least time a step of a multi-node ring takes (see ring_step_floor).

    floor: µs per step; steps: the ring's steps per loop (nsteps); raised: how many of them
    the floor can lengthen (the nNodes-1 / 2(nNodes-1) network hops NCCL already prices as
    one crossing are left to its hwLat[NET]); base: µs every step already pays besides its
    data (NCCL's per-step latency share and the kernel's per-step handshake)."""
    floor: float
    steps: int
    raised: int
    base: float

    def stall(self, loops: int, full_loop_us: float, last_loop_us: float) -> float:
        """µs the floor adds: per raised step, what its data and base leave of the floor."""
        def short(loop_us: float) -> float:
            return max(0.0, self.floor - self.base - loop_us / self.steps)
        return self.raised * ((loops - 1) * short(full_loop_us) + short(last_loop_us))


def ring_step_floor(op: str, proto: str, shape: CommShape, consts: NcclConstants,
                    step_sync: float = 0.0) -> RingStepFloor | None:
    """A multi-node AllReduce / AllGather / ReduceScatter ring's steps are held to the cost
    of one network crossing (None on one node or for other ops).

    In a ring every chunk crosses every link, so each of the ring's nsteps (n-1 for
    AllGather / ReduceScatter, 2(n-1) for AllReduce) goes through every network connection
    -- not only the nNodes-1 steps NCCL's latency counts as network hops; tuning.cc knows
    ("Inter-node rings still have to launch nsteps * net overhead") but charges the other
    steps only max(hwLat[intra], getNetOverhead = 1 µs, x3 for Simple). A connection's
    proxy moves its steps one phase per progress pass (net.cc: sendProxyProgress does one
    post or isend per sub and call, recvProxyProgress returns after the first phase that
    progressed: post, test, tail, done), so the steps file through it one by one: a ring
    step takes at least what one step takes to cross the network -- NCCL's own per-hop
    price for it (hwLat[NET][Ring][proto] + the fabric's latency, twice for Simple's flush
    term, as nccl_model.latency charges a network hop) plus the hand-off NCCL does not
    count (PROXY_HANDOFF_US per message the step sends). It is a bound on the step rate:
    a step's data and handshake overlap it (RingStepFloor.stall takes the larger), so
    steps that carry enough data (large messages, few ranks) do not see it. No constant is
    new: hwLat from tuning.cc, the hand-off fitted on the Nebius curve.
    """
    if shape.n_nodes < 2 or op not in ("all_reduce", "all_gather", "reduce_scatter"):
        return None
    from . import nccl_model as nm
    pi = nm.PROTOS.index(proto)
    steps = nm.nsteps(op, shape.n_ranks)
    inter = 2 * (shape.n_nodes - 1) if op == "all_reduce" else shape.n_nodes - 1
    intra = consts.hw_lat[shape.intra_hw]["Ring"][pi]
    ncclq = max(intra, nm.net_overhead_us(shape) * (3 if proto == "Simple" else 1))
    floor = consts.hw_lat["NET"]["Ring"][pi] + ring_messages_per_step(proto) * PROXY_HANDOFF_US
    return RingStepFloor(floor, steps, max(0, steps - inter), ncclq + step_sync)


def tree_crossings(n_nodes: int) -> int:
    """Network crossings of one chunk in a Tree AllReduce: up and down the inter-node tree."""
    return 2 * int(math.ceil(math.log2(n_nodes))) if n_nodes > 1 else 0


def tree_net_fill(first_wire_bytes: float, net_rate: float, n_nodes: int) -> float:
    """µs the first chunk spends crossing the network, up and down the tree, beyond NCCL's
    per-hop latency: the proxy forwards a FIFO step only once the GPU wrote all of it
    (store-and-forward at a channel's share of the NICs, `net_rate` GB/s), plus the proxy
    hand-off per crossing."""
    if n_nodes <= 1 or net_rate <= 0:
        return 0.0
    return tree_crossings(n_nodes) * (first_wire_bytes / (1000.0 * net_rate) + PROXY_HANDOFF_US)


def nic_tree_bw(shape: CommShape) -> float:
    """Algorithm bandwidth (GB/s) the heads' NICs give a tree across nodes."""
    bw = shape.node_nics_bw(min(max(1, shape.nics_per_node), shape.nvls_heads))
    return bw if shape.n_nodes <= 2 else bw / 2.0


def nvls_node_bw(shape: CommShape, consts: NcclConstants) -> float:
    """One node's NVLS AllReduce algBw (GB/s) its NVLink ports carry; 0 without NVLS.

    Without buffer registration (all_reduce.h, RunWorkColl NVLS: nccl-tests' case) a loop
    moves one chunk c per head h of H. The scatter and gather warps copy between the user
    buffers and this GPU's own share of the multicast buffers (local memory); the switch's
    multimem.ld_reduce of head h's chunk reads it from every GPU, and the head's multimem.st
    of the sum lands on every GPU. So a head sends H·c (its part of every head's reduce)
    plus c (its own store) and receives c (its reduce's result) plus H·c (every head's
    store): (H + 1)·c each way for H·c of data, an algBw of link × H / (H + 1); a GPU that
    heads no channel moves H·c each way. Link: NCCL's per-GPU NVLink bandwidth times its
    NVLS efficiency (tuning.cc nvlsEfficiency: what multimem operations achieve of it).

    NCCL's own formula (nccl_model.bandwidth) prices its graph search's speed step
    instead, which only steers its choice: on H100 it gives 8 GPUs the same 272 GB/s
    but 6 GPUs 306 (speed 60 x 6 heads) where nccl#1455 measured 5 / 6 / 7 / 8 H100s at
    an almost constant 262-274 GB/s algBw, as H / (H + 1) has it.
    """
    if not shape.nvls_capable or consts.nvls_efficiency is None:
        return 0.0
    eff = consts.nvls_efficiency[arch_family(shape.arch)]
    heads = shape.nvls_heads
    return shape.intra_bw * eff * heads / (heads + 1)


def nvlstree_stage_bw(shape: CommShape, consts: NcclConstants | None = None) -> tuple[float, float]:
    """(one node's NVLS AllReduce algBw, the heads' NIC tree algBw), GB/s, with the newest
    table's NVLS efficiency (what the hardware delivers; the version's table only steers).
    In NVLSTree the heads' reduce warps send the switch's sum to the network and their
    broadcast warps multicast what comes back: the same NVLink bytes as one node's NVLS.
    The node's stage moves at the file's NVLink (shape.fabric_ratio: 1 where the file is
    the hardware NCCL's constants stand for), the NIC tree at the NICs'."""
    consts = constants_for(None) if consts is None else consts
    return nvls_node_bw(shape, consts) * shape.fabric_ratio, nic_tree_bw(shape)


def nvlstree_channel_cap(shape: CommShape, consts: NcclConstants) -> float:
    """NCCL's per-channel NVLSTree throughput as an AllReduce algBw, GB/s (inf without one).

    From 2.28 tuning.cc caps each NVLSTree channel at perChMaxNVLSTreeBws (Hopper 57.7 GB/s
    on 2 nodes, 45.5 on 4+; Blackwell 96 / 43.8), the same kind of per-channel kernel limit
    as perChMaxTreeBws, which the Tree kernel is already held to: it is what one channel's
    warps move, not a steering step of the graph search. busBw = cap x the NVLS graph's
    channels (one per head), algBw = busBw x nRanks / nSteps (tuning.cc's AllReduce ratio).
    """
    if consts.per_ch_nvlstree is None or shape.n_nodes < 2 or not shape.nvls_capable:
        return math.inf
    from . import nccl_model as nm
    per_ch = consts.per_ch_nvlstree[arch_family(shape.arch)][nm._node_index(shape.n_nodes)]
    if per_ch <= 0:
        return math.inf
    return per_ch * shape.nvls_heads * shape.n_ranks / nm.nsteps("all_reduce", shape.n_ranks)


def tree_kernel_bw(shape: CommShape, table_bw: float) -> float:
    """Tree/Simple AllReduce algBw (GB/s) the kernel moves across nodes: the slower of the
    NICs' tree (nic_tree_bw) and the chain in a node, where every GPU sends each byte twice
    over its links -- the partial sums up to its parent and the result down to its child.
    NCCL's table (`table_bw`: graph channels x the search's speed x 0.92, capped per graph
    channel) prices the graph search's steps, not these links (the runtime runs twice the
    graph's channels); one node, or no NICs: the table."""
    if shape.n_nodes < 2 or shape.nic_bw <= 0:
        return table_bw
    return min(nic_tree_bw(shape), shape.intra_bw * shape.fabric_ratio / 2.0)


def nvlstree_kernel_bw(shape: CommShape, consts: NcclConstants) -> float:
    """NVLSTree AllReduce algBw (GB/s) the kernel moves: the slowest of one node's NVLS (on
    the file's NVLink), the NIC tree and NCCL's per-channel NVLSTree throughput."""
    intra, net = nvlstree_stage_bw(shape, consts)
    if intra <= 0:
        return 0.0
    return min(intra, net, nvlstree_channel_cap(shape, consts))


def kernel_view(shape: CommShape) -> CommShape:
    """The shape whose NCCL latency is what the kernel pays: each inter-node hop costs
    NCCL's hwLat[NET] plus the fabric's adapter and switch latency from the topology file,
    not the latency a net plugin reports to steer NCCL's tuner."""
    if shape.n_nodes == 1 or shape.nic_latency_us == shape.net_hop_us:
        return shape
    return replace(shape, nic_latency_us=shape.net_hop_us)


def nvlstree_fill(first: float, bandwidth: float, stage_bw: tuple[float, float], sync: float,
                  n_nodes: int) -> float:
    """µs the NVLSTree pipeline takes to fill and drain beyond its bottleneck stage.

    `first` is the first loop's time at `bandwidth` (GB/s); `stage_bw` = (one node's NVLS,
    the heads' NIC tree) at the same scale. A chunk runs scatter + switch reduce in its
    node, then crosses the network to its tree parent and, reduced at the root, back down
    (all_reduce.h NVLS_TREE: the reduce warps send up, the bcast warps receive from the
    parent), then multicast + gather. Every crossing is a stage of its own: a chunk cannot
    go down before it went up. Each is charged the channel's steady share of the NICs --
    in steady state every NIC direction carries one loop's ups and an earlier loop's downs
    -- up and down the tree's depth: 2 x ceil(log2 nNodes) crossings. The two trees sharing
    the NICs' two directions sets the bottleneck (the transfer), not this fill.

    This is an upper reading, and what the source gives is the lower one, tested and not
    taken (validate/collective_notes.md, "NVLSTree fill across nodes: the lockstep
    reading"): a chunk is one step and one network message (ProtoSimple<1, 1>;
    calcCollChunking's nsteps = loops), channel c runs tree c % 2 (connect.cc connectNvls)
    and a head's NIC carries both trees, so in lockstep a fill crossing moves one tree's
    half of a loop per NIC direction: crossings x t_net / 2. That fits the single-loop
    points of the H100 IB curves (Nebius 4 / 8 MiB +11.6 / +19.3 % -> +1.1 / +3.9 %) but
    leaves every 2-node curve's multi-loop points 2-27 % fast (B200, EFA, and H100 IB at
    16-128 MiB): a multi-loop message pays 0.5-0.9 of a crossing more than lockstep gives,
    and no source fact for it was found. No constant is fitted either way.
    """
    intra_bw, net_bw = stage_bw
    t_in = max(first * bandwidth / intra_bw, sync)
    t_net = max(first * bandwidth / net_bw, sync)
    crossings = 2 * int(math.ceil(math.log2(n_nodes)))
    return 2 * t_in + crossings * t_net - max(t_in, t_net)

"""Collective time from the kernel's pipeline: steps, slices, loops and chunks.

NCCL's tuning model (nccl_model.py) charges `latency + size / bandwidth` with the
latency paid once per operation. Its kernels move data in fixed-size pipeline steps and
every step pays a synchronisation the tuning model does not count (spin on the peer's
flag, block barrier, fence, remote flag store). Here the time is built from those steps,
with NCCL's algorithm/protocol choice left as NCCL makes it:

    time = latency_NCCL + n_sync * step_us + effective_bytes / bandwidth_runtime

* latency_NCCL -- NCCL's own latency (base + per-hop hwLat): the pipeline's fill, paid
  once. NCCL's empirical corrections (Tree's treeCorrectionFactor, multi-node Ring's
  "plateau" x1.4) are left out of the time: the per-step syncs are the mechanism they
  stand in for. They still steer NCCL's choice, which stays NCCL's.
* n_sync -- steps on the critical path: loops x primitives x slices for Ring; chunk
  steps up and down for Tree. step_us -- what one step's handshake costs (see SYNC_US).
  A one-node Simple ring in P2P write mode hides each slice's handshake behind the other
  slice's data (hidden_handshake_stall): it pays only where a slice is shorter than it.
  NVLS in one node runs three warp groups (scatter -> switch reduce / multicast ->
  gather) linked by FIFOs; each moves a loop's chunks as one step whose handshake is in
  series with its data, so every loop pays one, and the pipeline's fill and drain cost
  one more stage (_nvls_serial). NVLSTree (multinode.py's model) overlaps its syncs with
  the other stages' data and pays its fill per stage.
* effective_bytes -- the chunk NCCL really uses: the last loop's chunk shrinks to the
  remainder; up to v2.19 the kernel rounded it to the protocol's grain, for LL128 to
  nthreads x 30 B, which leaves the last chunk slots of a loop empty at 2-16 MiB; the
  busiest rank then moves a little more than its exact share (_rounded_work; v2.20
  splits the remainder on the host).
* bandwidth_runtime -- NCCL's bandwidth on the channels/threads the kernel really
  launches (channels.trimmed_slowdown).

With one loop and no per-step cost this is NCCL's own formula for Ring. Sources: NCCL
v2.18.5 src/collectives/device/all_reduce.h (runRing, NVLS RunWorkElement),
prims_simple.h, src/enqueue.cc (computeColl / calcCollChunking chunk rules),
src/include/device.h (buffer sizes), src/include/collectives.h (CHUNKSTEPS/SLICESTEPS).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType

from .channels import runtime_lanes
from .multinode import (RingStepFloor, nvlstree_fill, nvlstree_stage_bw, ring_messages_per_step,
                        ring_step_floor, tree_net_fill)
from .nccl_model import net_overhead_us
from .constants import DEFAULT_BUFF_BYTES, NCCL_STEPS, NcclConstants, arch_family, constants_for
from .tree_chain import chain_fill, chain_starts
from .trimming import trimmed_slowdown

WARP_SIZE = 32
# perChMaxTreeBws of the newest table: what one Tree channel's warps move (the release's own
# table only steers NCCL's choice, as for the kernel bandwidths in model.py)
KERNEL_PER_CH_TREE = constants_for(None).per_ch_tree
# Buffer bytes per connection, NCCL's defaults (the run's own: consts.buff_bytes, which
# NCCL_BUFFSIZE & co set -- nccl_env.py).
BUFF_BYTES = DEFAULT_BUFF_BYTES
# Ring Simple (chunkSteps, sliceSteps) per collective (collectives.h).
RING_STEPS = MappingProxyType({"all_reduce": (4, 2), "all_gather": (4, 2), "reduce_scatter": (4, 2),
                               "broadcast": (1, 1), "reduce": (1, 1)})
NVLS_MAX_CHUNK = 128 << 10             # enqueue.cc: maxChunkSize / comm->nvlsChunkSize default
LL128_GRAIN_PER_THREAD = 30            # bytes: nthreads*(calcBytePerGrain/sizeof(T))/2 (<= 2.19)

# The cost of one synchronised pipeline step, µs, beyond NCCL's latency charged once.
# Simple: every slice (two per chunk, in AllReduce, AllGather and ReduceScatter alike)
# waits on the peer's flag, passes two block barriers, fences (fence.acq_rel.sys) and posts
# a remote flag (prims_simple.h genericOp); NCCL's tuning model prices that handshake as its
# per-hop latency hwLat[Ring][Simple] (3.4 µs over NVLink, 5.7 over PCIe) but charges it
# once per hop of a single chunk. In series, every slice pays it split over a chunk's
# slices (hwLat / 2): with one loop and nothing else added this is NCCL's own sum of hops.
# In P2P *read* mode, which NCCL uses only between sm80 GPUs over NVLink (paths.cc "Enable
# P2P Read for Ampere/NVLink only"), a slice's loads wait on the flag and start with a
# round trip over NVLink: in series, as the A100 curve shows at every size. With P2P write
# in one node the post warp fences and flags while the workers copy the next slice
# (nworkers = nthreads - WARP_SIZE "to overlap the threadfence and the copy") and the FIFO
# holds NCCL_STEPS / 2 slices, so the handshake hides behind the other slice's data
# (hidden_handshake_stall) -- found on the held-out H100 2.29.2 ReduceScatter/AllGather
# curves, which a series cost made 13-26 % slow at 32-64 MiB. Across nodes the ring keeps
# the series cost (the proxy's network steps are multinode.py's model).
# LL and LL128 carry their flags inside the data lines (no fence, no separate flag), so
# their step has no handshake of that kind.
#
# Fitted, ONE constant per protocol, each on ONE curve -- the Azure ND A100 v4 AllReduce
# (embsim/validation_data/azure-nd-a100-v4-allreduce.yaml), on its points where NCCL runs
# that protocol, by `python -m embsim.collectives.fit_sync` (0.1 µs grid, least mean
# |error|): Simple's P2P-read round trip, and LL's per-step cost. The A100 LL128 points
# (2-16 MiB, one loop, 15 steps each) take NCCL's LL128 latency plus their bytes at ~0.66
# of NCCL's LL128 bandwidth at every size: a rate, not a per-step cost, so LL128 is not
# fitted and the gap is reported (docs/validation.md). Every other GPU
# (H100, H200, B200, PCIe boxes) uses NCCL's hwLat only: a prediction.
SYNC_US = MappingProxyType({"LL": 0.9, "LL128": 0.0, "Simple": 2.9})
SLICES_PER_HOP = 2          # ALLREDUCE_CHUNKSTEPS / ALLREDUCE_SLICESTEPS (collectives.h)


def p2p_read(shape) -> bool:
    """NCCL's Simple protocol reads from the peer: sm80 GPUs over NVLink (paths.cc)."""
    return 80 <= shape.arch < 86 and shape.intra != "pcie"


def step_us(proto: str, shape, consts: NcclConstants) -> float:
    """µs one synchronised step costs on this communicator (see SYNC_US)."""
    if proto != "Simple":
        return SYNC_US[proto]
    hop = consts.hw_lat[shape.intra_hw]["Ring"][2] / SLICES_PER_HOP
    return hop + (SYNC_US["Simple"] if p2p_read(shape) else 0.0)


@dataclass(frozen=True)
class PipelineTime:
    latency: float     # µs the flow group pays without moving data (fill, syncs)
    transfer: float    # µs of data movement at the runtime bandwidth
    n_sync: int        # synchronised steps on the critical path
    loops: int
    chunk: int         # bytes per (channel, rank) chunk of a full loop

    @property
    def time(self) -> float:
        return self.latency + self.transfer


def step_bytes(proto: str, buff=BUFF_BYTES) -> int:
    """Data bytes one FIFO step carries (enqueue.cc: LL halves for flags, LL128 15/16)
    with `buff` the run's buffer bytes per protocol."""
    step = buff[proto] // NCCL_STEPS
    if proto == "LL":
        return step // 2
    if proto == "LL128":
        return step // 16 * 15
    return step


def _round_up(x: float, grain: int) -> int:
    return int(math.ceil(x / grain)) * grain if grain > 0 else int(math.ceil(x))


def ring_primitives(op: str, n: int) -> int:
    """Primitive steps per chunk in one loop of runRing (send, n-2 middle steps, ...)."""
    if op == "all_reduce":
        return 2 * n - 1
    return n


def _rounded_work(rest: float, real: float, exact: float, channels: int, n: int) -> float:
    """Busiest rank's work in an AllReduce's last loop whose LL/LL128 chunk was rounded up
    (<= 2.19), relative to the exact split.

    all_reduce.h runRing lays LL/LL128 chunks out chunk-major, (chunk * nChannels +
    channel) * realChunk (calcOffset), so a rounded-up chunk leaves the last chunk slots
    empty instead of stretching every step. These protocols carry their flags in every
    line and a step with nothing to move polls no line (prims_ll*.h: the line loop runs
    over nelem only), so an empty slot costs a step's handshake, not a chunk's data. A
    rank handles every chunk of its channel once in the reduce-scatter half and all but
    its own again in the all-gather half: 2 x sum - its own chunk; channel 0 is the
    fullest. (AllGather / ReduceScatter lay chunks out channel-major, bid * realChunk:
    there the rounding idles the last channels and every busy step moves a whole chunk.)
    """
    sizes = [min(real, max(0.0, rest - (c * channels) * real)) for c in range(n)]
    work = 2 * sum(sizes) - min(sizes)
    return max(1.0, work / ((2 * n - 1) * exact))


def hidden_handshake_stall(hop: float, prims: int, slices: int, loops: int, full_loop_us: float,
                           last_loop_us: float) -> float:
    """µs a ring's handshakes add when each hides behind the data of the other slices in flight.

    A primitive step moves its chunk as `slices` slices; the peer's flag for one slice
    arrives while the other slices' data move (the FIFO holds NCCL_STEPS / StepPerSlice
    slices), so a step costs max(slices x t, t + hop) for slice data time t: the handshake
    shows only where a slice's data is shorter than it (small messages)."""
    per = max(1, prims * slices)
    t_full, t_last = full_loop_us / per, last_loop_us / per
    lag = slices - 1
    return prims * ((loops - 1) * max(0.0, hop - lag * t_full) + max(0.0, hop - lag * t_last))


def ring(op: str, proto: str, nbytes: float, n: int, channels: int, threads: int,
         latency: float, bandwidth: float, slowdown: float, consts: NcclConstants,
         step: float, hop: float | None = None, floor: RingStepFloor | None = None) -> PipelineTime:
    """Ring AllReduce/AllGather/ReduceScatter (chunks per rank) or Broadcast/Reduce chain.

    `hop` (µs, AllReduce/AllGather/ReduceScatter only): the handshake overlaps the other
    slices' data (hidden_handshake_stall) instead of `step` being paid by every slice.
    `floor` (across nodes): the least time a ring step takes (multinode.ring_step_floor)."""
    chunk_steps, slice_steps = RING_STEPS.get(op, (1, 1)) if proto == "Simple" else (1, 1)
    chunk = step_bytes(proto, consts.buff_bytes) * chunk_steps
    slices = max(1, chunk_steps // slice_steps)
    per_loop = n if op in ("all_reduce", "all_gather", "reduce_scatter") else 1
    loop = channels * per_loop * chunk
    loops = max(1, int(math.ceil(nbytes / loop)))
    rest = nbytes - (loops - 1) * loop
    exact = rest / (channels * per_loop)
    if not consts.ll128_chunk_rounding:
        last = min(chunk, exact)   # 2.20+: the host splits the remainder exactly per rank
    elif proto == "LL128":
        last = min(chunk, _round_up(exact, threads * LL128_GRAIN_PER_THREAD))
    elif proto == "LL":
        last = min(chunk, _round_up(exact, threads * 8))
    else:
        last = min(chunk, _round_up(exact, max(WARP_SIZE, threads - WARP_SIZE) * 8))
    last = max(last, exact)
    if proto != "Simple" and op == "all_reduce" and last > exact:
        effective = (loops - 1) * loop + channels * per_loop * exact * _rounded_work(
            rest, last, exact, channels, per_loop)
    else:
        effective = (loops - 1) * loop + channels * per_loop * last
    transfer = effective / (1000.0 * bandwidth) * slowdown
    if per_loop == 1:
        # chain: every chunk passes every rank; fill is in NCCL's latency
        n_sync = int(math.ceil(nbytes / (channels * chunk))) * slices
    else:
        n_sync = loops * ring_primitives(op, n) * slices
        full_us = loop / (1000.0 * bandwidth) * slowdown       # one whole loop's data
        last_us = transfer - (loops - 1) * full_us
        if hop is not None:
            stall = hidden_handshake_stall(hop, ring_primitives(op, n), slices, loops, full_us, last_us)
            return PipelineTime(latency + stall, transfer, n_sync, loops, chunk)
        if floor is not None:
            latency += floor.stall(loops, full_us, last_us)
    return PipelineTime(latency + n_sync * step, transfer, n_sync, loops, chunk)


def tree_chunk(nbytes: float, channels: int, depth: int, proto: str, nn: int, ppn: int,
               buff=BUFF_BYTES, halve_simple: bool = True) -> int:
    """Tree chunk size (enqueue.cc computeColl: a step of the run's buffer `buff`, halved
    while too few chunks per depth; for Simple only up to 2.19, `halve_simple`). NCCL
    compares whole chunks per channel (integer division of its size_t byte count)."""
    chunk = buff[proto] // NCCL_STEPS
    if proto == "Simple":
        # 2.20+ keeps a whole step (halve_simple False): no halving rules
        rules = ((8, 131072), (4, 65536), (1, 32768)) if halve_simple else ()
        for mult, floor in rules:
            while nbytes // (channels * chunk) < depth * mult and chunk > floor:
                chunk //= 2
    elif proto == "LL128":
        steps = 1 + int(math.log2(nn)) + 0.1 * ppn
        for mult, floor in ((64, 131072), (16, 32768)):
            while nbytes // (channels * chunk) < steps * mult / ppn and chunk > floor:
                chunk //= 2
        chunk = chunk // 16 * 15
    else:
        chunk //= 2
    return chunk


# Bytes on the wire per data byte: LL lines carry 8 B of data and 8 B of flags, LL128 lines
# 120 of 128 B (device.h); the proxy sends the buffer as the GPU wrote it.
WIRE_PER_BYTE = MappingProxyType({"LL": 2.0, "LL128": 16.0 / 15.0, "Simple": 1.0})


def tree(proto: str, nbytes: float, channels: int, nn: int, ppn: int, latency: float,
         bandwidth: float, slowdown: float, step: float, net_rate: float = 0.0,
         consts: NcclConstants | None = None, shape=None, tree_channels: int = 0) -> PipelineTime:
    """Tree AllReduce: every chunk is reduced up and broadcast down; each pays a sync.

    Across nodes the first chunk is store-and-forwarded: the net proxy posts a FIFO step
    only once the GPU has finished all of it (net.cc sendProxyProgress: Simple waits on the
    tail, LL / LL128 scan every line's flag), so each network hop up and down adds one
    chunk's wire time at a channel's share of the NICs (`net_rate`, GB/s) before the far
    side has anything. NCCL's hwLat[NET] is the cost of an empty step, not of this fill.
    A Simple chunk is also store-and-forwarded inside a node, hop by hop along the chain
    (tree_chain.chain_fill): from 2.20 it is a whole step of the run's buffer.
    """
    # connect.cc connectTrees: nRanks/nNodes - 1 + log2i(nNodes), log2i rounding down
    depth = max(1, ppn - 1 + (int(nn).bit_length() - 1))
    chunk = (tree_chunk(nbytes, channels, depth, proto, nn, ppn) if consts is None else
             tree_chunk(nbytes, channels, depth, proto, nn, ppn, consts.buff_bytes,
                        consts.tree_simple_chunk_halving))
    chunks = max(1, int(math.ceil(nbytes / (channels * chunk))))
    n_sync = 2 * chunks
    transfer = nbytes / (1000.0 * bandwidth) * slowdown
    first = min(chunk, nbytes / channels) * WIRE_PER_BYTE[proto]
    fill = tree_net_fill(first, net_rate, nn)
    if proto == "Simple" and shape is not None:
        # a chain hop is a one-node NVLink/PCIe copy: one channel's rate is tuning.cc's
        # one-node perChMaxTreeBw (the N2/N4 columns also hold the network's share)
        per_ch = KERNEL_PER_CH_TREE[arch_family(shape.arch)][0]
        starts = chain_starts(ppn, tree_channels, shape.nics_per_node) if tree_channels else 1
        fill += chain_fill(min(chunk, nbytes / channels), chunks, ppn, channels, starts,
                           shape.intra_bw * shape.fabric_ratio, per_ch, shape.nic_local_gpus)
    return PipelineTime(latency + n_sync * step + fill, transfer, n_sync, chunks, chunk)


def nvls_chunk(nbytes: float, concurrent: int, tree_variant: bool, nn: int, nvls_bw: float,
               consts: NcclConstants) -> int:
    """NVLS / NVLSTree chunk (enqueue.cc): smaller chunks for smaller messages."""
    if tree_variant:
        # up to 2.20 a Simple step of the run's buffer, 2.21+ comm->nvlsChunkSize
        chunk = (consts.buff_bytes["Simple"] // NCCL_STEPS if consts.nvlstree_chunk_is_step
                 else consts.nvlstree_chunk)
        if consts.nvlstree_chunk_cap_4nodes and nn >= 4:
            chunk = min(chunk, 65536)
        rules = ((32, 262144), (16, 131072), (4, 65536), (1, 32768))
    else:
        # a Simple step of the run's buffer, at most nvlsChunkSize (NCCL_BUFFSIZE < 1 MiB shrinks it)
        chunk = min(NVLS_MAX_CHUNK, consts.buff_bytes["Simple"] // NCCL_STEPS)
        if consts.nvls_small_chunk_multinode and nn > 1 and nvls_bw < 150:
            chunk = 32768
        rules = ((64, 65536), (8, 32768), (2, 16384))
    for mult, limit in rules:
        if nbytes < mult * concurrent * chunk and chunk > limit:
            chunk = limit
    return chunk


def nvls(op: str, nbytes: float, channels: int, heads: int, nn: int, latency: float,
         bandwidth: float, consts: NcclConstants, tree_variant: bool = False,
         step: float = 0.0, stage_bw: tuple[float, float] | None = None) -> PipelineTime:
    """NVLS(Tree): loops of channels x heads x chunk through a pipeline of warp groups.

    NVLS in one node: see _nvls_serial. NVLSTree (and NVLS over SHARP across nodes): each
    loop is one stage time per group;
    the groups overlap, so a loop costs the slower of its data and one sync, and the
    pipeline fills and drains once. NVLSTree across nodes (`stage_bw` = (in-node NVLS, network) GB/s) runs
    scatter+reduce in the node, the tree's up and down hops over the NICs, then
    multicast+gather: the fill is the stages that are not the bottleneck, each at its own
    rate (multinode.nvlstree_fill).
    """
    concurrent = channels * heads
    chunk = nvls_chunk(nbytes, concurrent, tree_variant, nn, bandwidth, consts)
    loop = concurrent * chunk
    loops = max(1, int(math.ceil(nbytes / loop)))
    rest = nbytes - (loops - 1) * loop
    if not tree_variant and nn == 1:
        return _nvls_serial(channels, heads, chunk, loops, rest, latency, bandwidth, consts, step)
    sync = step
    full, last = _nvls_loop_times(channels, heads, chunk, rest, bandwidth,
                                  consts.nvls_host_split and (nn == 1 or tree_variant))
    first = full if loops > 1 else last
    transfer = (loops - 1) * full + last
    idle = (loops - 1) * max(0.0, sync - full) + max(0.0, sync - last)
    if tree_variant and nn > 1 and stage_bw is not None:
        fill = nvlstree_fill(first, bandwidth, stage_bw, sync, nn)
        stages = 3
    else:
        stages = 2 + (2 * int(math.ceil(math.log2(nn))) if (tree_variant and nn > 1) else 0)
        fill = stages * max(first, sync)
    return PipelineTime(latency + idle + fill, transfer, loops + stages, loops, chunk)


def _nvls_loop_times(channels: int, heads: int, chunk: int, rest: float, rate: float,
                     host_split: bool) -> tuple[float, float]:
    """(full, last): µs of a full loop's data and of the last, partial loop's, at `rate` GB/s."""
    full = channels * heads * chunk / (1000.0 * rate)
    if host_split:
        # 2.20+: the host hands every channel an equal part (workCount; 2.22+ ncclCollCbdPart)
        return full, rest / (1000.0 * rate)
    # the kernel's layout (up to 2.19; NVLS over SHARP across nodes): channel c takes bytes
    # [c, c+1) x heads x chunk of a loop, so a partial loop waits on its busiest channel,
    # at one channel's share of the bandwidth
    return full, min(rest, heads * chunk) * channels / (1000.0 * rate)


def _nvls_serial(channels: int, heads: int, chunk: int, loops: int, rest: float,
                 latency: float, bandwidth: float, consts: NcclConstants, step: float) -> PipelineTime:
    """NVLS in one node: every loop pays one handshake in series with its data.

    Each warp group (scatter, switch reduce + multicast, gather) moves one chunk per peer
    per loop as ONE step of a ProtoSimple<1, 1> primitive -- one slice per step -- and the
    same warps wait on the peer's flag, move the data and post (all_reduce.h NVLS
    RunWorkElement): the handshake (`step`, NCCL's per-hop Simple latency) is not hidden
    behind data. NCCL's NVLS bandwidth is tuned on large messages, which run its full
    128 KiB chunk (enqueue.cc maxChunkSize / comm->nvlsChunkSize); that bandwidth already
    carries one handshake per full loop, so the data rate is what is left after it. The
    smaller chunks NCCL picks below 1 GiB (64, 32, 16 KiB) pay the same handshake for
    half, a quarter, an eighth of the data. The pipeline fills and drains once (two extra
    loop times of a stage).
    """
    concurrent = channels * heads
    t_max = concurrent * NVLS_MAX_CHUNK / (1000.0 * bandwidth)
    # data rate behind NCCL's bandwidth at its full chunk; a degenerate table (a handshake
    # longer than a full loop) keeps NCCL's bandwidth as the data rate
    rate = concurrent * NVLS_MAX_CHUNK / (1000.0 * (t_max - step)) if t_max > step else bandwidth
    full, last = _nvls_loop_times(channels, heads, chunk, rest, rate, consts.nvls_host_split)
    first = full if loops > 1 else last
    transfer = (loops - 1) * full + last
    return PipelineTime(latency + (loops + 1) * step + first, transfer, loops + 1, loops, chunk)


def collective_time(op: str, algo: str, proto: str, nbytes: float, shape, graphs, consts: NcclConstants,
                    nccl_latency: float, nccl_bandwidth: float) -> PipelineTime:
    """The pipeline time of NCCL's chosen (algo, proto) for `nbytes` on this communicator.

    `nccl_latency` / `nccl_bandwidth` are NCCL's own table entries (µs, GB/s) for the pair,
    before the size-dependent corrections of ncclTopoGetAlgoTime.
    """
    n = shape.n_ranks
    full = graphs.nvls_channels if algo in ("NVLS", "NVLSTree") else graphs.comm_channels
    channels, threads = runtime_lanes(nbytes, algo, proto, n, full)
    if algo in ("NVLS", "NVLSTree"):
        heads = shape.nvls_heads
        stage_bw = None
        if algo == "NVLSTree" and shape.n_nodes > 1:
            intra, net = nvlstree_stage_bw(shape)
            if min(intra, net) > 0:    # at the kernel's bandwidth (the file's links included)
                k = nccl_bandwidth / min(intra, net)
                stage_bw = (intra * k, net * k)
        # NVLS in one node: one slice per step (ProtoSimple<1, 1>), so a step pays NCCL's
        # whole per-hop handshake; across nodes the ring's per-slice share (multinode.py's model)
        one_node_nvls = algo == "NVLS" and shape.n_nodes == 1
        step = step_us(proto, shape, consts) * (SLICES_PER_HOP if one_node_nvls else 1)
        return nvls(op, nbytes, graphs.nvls_channels, heads, shape.n_nodes, nccl_latency,
                    nccl_bandwidth, consts, tree_variant=(algo == "NVLSTree"),
                    step=step, stage_bw=stage_bw)
    slowdown = trimmed_slowdown(op, nbytes, algo, proto, shape, graphs, consts)
    if algo == "Tree":
        net_rate = shape.node_nics_bw() / full if shape.n_nodes > 1 else 0.0
        step = step_us(proto, shape, consts)
        if shape.n_nodes > 1:
            # a step through the network is launched by the proxy: NCCL charges its Ring steps
            # max(hop latency, netOverhead) (tuning.cc getNetOverhead: 1 µs, 2 on AMD, x3 for
            # Simple); the tree's chunk steps up and down cross the same proxy
            step = max(step, net_overhead_us(shape) * (3 if proto == "Simple" else 1))
        return tree(proto, nbytes, channels, shape.n_nodes, shape.ppn, nccl_latency, nccl_bandwidth,
                    slowdown, step, net_rate, consts, shape, graphs.tree.n_channels)
    # Ring and PAT (PAT's per-step pattern is not modelled: NCCL's formula, as a ring)
    hop = None
    if proto == "Simple" and shape.n_nodes == 1 and not p2p_read(shape):
        # P2P write in one node: the post warp fences and flags while the workers copy the
        # next slice (prims_simple.h), so the handshake (NCCL's per-hop latency) overlaps
        hop = consts.hw_lat[shape.intra_hw]["Ring"][2]
    step = step_us(proto, shape, consts)
    # across nodes every ring step passes the network proxy (multinode.ring_step_floor); a
    # step's own handshakes are one per slice (= per network message)
    floor = (ring_step_floor(op, proto, shape, consts, step * ring_messages_per_step(proto))
             if algo == "Ring" else None)
    return ring(op, proto, nbytes, n, channels, threads, nccl_latency, nccl_bandwidth, slowdown, consts,
                step, hop, floor)

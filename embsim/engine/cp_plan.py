"""Context parallelism's KV ring in one iteration's step plan (workload.context_parallel
says what Transformer Engine's p2p ring computes and sends; this module places it).

Per transformer block and direction, the block's attention is cut out of its compute op
into one op per ring step ("cp-fwd<i>" / "cp-bwd<i>", each timed from its own kernel by
the kernel model), placed just before the block's op, which keeps the rest of the block
(its GEMMs, norms, MLP); a zero-time op ("cp-fwd-post" / "cp-bwd-post") before the first
step is where the first transfer is posted. Transfer i is a `sendrecv` collective on
channel "cp" over the CP groups (each rank to the next in its group, all groups at once,
through the network model: NVLink inside a node, the NICs across nodes), ready when step
i may start (after step i - 1 and transfer i - 1, as TE posts it right after waiting for
the previous one); step i + 1 waits for it, and the op after the last step waits for the
last (backward's final dKV, which the block's input-gradient GEMMs need). So a transfer
runs beside its step's attention, and whatever it takes beyond that step is exposed: the
engine's timeline decides, no formula here. A checkpointed block (--recompute) runs its
forward ring again before its backward ring (its recomputed attention is in its backward
op's time).

The order inside a block (attention steps before its GEMMs) is not Megatron's, which runs
the QKV GEMM first; the ring only overlaps its own steps (TE waits for each transfer before
the next step), so what it exposes does not depend on where in the block it sits.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..plan.names import bwd_name, extra_name, fwd_name
from ..plan.ops import CommOp, ComputeOp, channel_family
from ..workload.tensor_parallel import BLOCK_KINDS

CHANNEL = "cp"
# a ring step's kernels: its attention (<core>.cp<i>) and, PyTorch's, the merges or gradient
# accumulations after it (<core>.cp<i>.<what>: workload.torch_cp)
_STEP = {True: re.compile(r"\.flash\.cp(\d+)(?:\.\w+)?$"),
         False: re.compile(r"\.flash_bwd\.cp(\d+)(?:\.\w+)?$")}


def kv_chunk_bytes(model, layer, fp32: bool = False) -> float:
    """One rank's key/value chunk: b x s / C tokens x (2 kv_dim / TP) elements of the
    activations' 16-bit dtype (FP8 GEMMs keep BF16 attention inputs), or FP32 (PyTorch's
    dKV buffers). kv_dim is the query width under PyTorch's CP (workload.torch_cp)."""
    elt = 4 if fp32 else max(model.dtype_bytes, 2)
    return float(model.batch * model.seq * layer.kernels.kv_width * elt)


def step_kernels(layer, fwd: bool) -> list[list]:
    """The block's ring steps in step order, each its kernels (workload.kernels_layers._ring_steps)."""
    kernels = layer.kernels.fwd if fwd else layer.kernels.bwd
    steps: dict[int, list] = {}
    for k in kernels:
        if m := _STEP[fwd].search(k.name):
            steps.setdefault(int(m.group(1)), []).append(k)
    return [steps[i] for i in sorted(steps)]


def add_context_parallel(stream: list[ComputeOp], ctx) -> tuple[list, list, dict, dict]:
    """(stream with the ring-step ops, the ring's CommOps, compute OpId -> [(comm, 0)]
    waits, {comm name: the text of the step op it runs beside}: what the output reads the
    exposed time from)."""
    model = ctx.model
    cp = model.context_parallel
    if not cp.on:
        return stream, [], {}, {}
    stream = list(stream)
    comms: list[CommOp] = []
    waits: dict = {}
    beside: dict = {}
    recomputed = set(model.recomputed) | set(model.core_recomputed)

    def ring(layer, fwd: bool, tag: str, host) -> float:
        """Insert one ring before the stream op `host`; the seconds taken out of it."""
        steps = [ctx.kernel_seconds(group) for group in step_kernels(layer, fwd)]
        i = next(j for j, s in enumerate(stream) if s.id == host)
        total = sum(steps)
        room = stream[i].duration
        if total > room > 0:          # never more than the op held (scaled down alike)
            steps = [t * room / total for t in steps]
            total = room
        elif room <= 0:
            steps, total = [0.0] * len(steps), 0.0
        stream[i] = replace(stream[i], duration=stream[i].duration - total)
        post = ComputeOp(extra_name(f"{tag}-post", layer.name), 0.0)
        ops = [ComputeOp(extra_name(f"{tag}{n}", layer.name), t) for n, t in enumerate(steps)]
        stream[i:i] = [post] + ops
        last: dict = {}               # chain -> its previous transfer
        for n, x in enumerate(cp.transfers(fwd)):
            step = min(x.beside, len(ops) - 1)
            # named by the step it runs beside (beside_of); PyTorch's also by chain and order
            name = f"cp:{tag}:{layer.name}:{step}" + ("" if x.chain == "ring" else f"-{x.chain}{n}")
            after = post.id if x.after < 0 else ops[x.after].id
            prev = last.get(x.chain)
            deps = ((after, 0),) + (((prev, 0),) if prev else ())
            comms.append(CommOp(name=name, op=x.op,
                                nbytes=kv_chunk_bytes(model, layer, x.fp32) * x.chunks,
                                category="activation", channel=CHANNEL, ready_after=deps,
                                priority=-1.0, tensors=(), group=CHANNEL))
            # the step it runs beside; past the last, it runs beside nothing (its whole
            # time exposed: PyTorch's last dKV, waited for after the loop)
            beside[name] = ops[step].id.text
            # the next step (or, after the last, the rest of the block) waits for it
            waiter = ops[x.beside + 1].id if x.beside + 1 < len(ops) else host
            waits.setdefault(waiter, []).append((name, 0))
            last[x.chain] = name
        return total

    for layer in model.layers:
        if layer.kind not in BLOCK_KINDS or fwd_name(layer.name) not in {s.id for s in stream}:
            continue
        ring(layer, True, "cp-fwd", fwd_name(layer.name))
        if layer.name in recomputed:
            ring(layer, True, "cp-refwd", bwd_name(layer.name))
        ring(layer, False, "cp-bwd", bwd_name(layer.name))
    return stream, comms, waits, beside


def beside_of(comm: str) -> str:
    """The step op a ring transfer `cp:<tag>:<layer>:<i>` runs beside: extra:<tag><i>:<layer>.
    Under a pipeline (engine.pp_plan) the transfer is `s<v>:cp:<tag>:<layer>:<i>#m<k>`, one per
    virtual stage v and micro-batch k, and its step op extra:<tag><i>:<layer>#m<k>."""
    comm, _, mb = comm.partition("#")
    _, tag, rest = comm[comm.index("cp:"):].split(":", 2)
    layer, i = rest.rsplit(":", 1)
    i = i.split("-")[0]            # PyTorch's: <step>-<chain><n>
    return extra_name(f"{tag}{i}", layer + (f"#{mb}" if mb else "")).text


def exposed_seconds(run) -> float:
    """Seconds per iteration the ring's transfers ran past the step they were beside
    (the steady iterations of the simulated timeline): the exposed communication of
    context parallelism, as the simulation placed it. Read on the rank class that waits
    least, the slowest GPUs: a faster rank also waits for its slower ring neighbours,
    which is their compute, not the transfer's."""
    from .metrics import steady_window
    first, last = steady_window(run)
    n = max(last - first, 1)
    ends: dict = {}
    for r in run.compute:
        if first < r.iteration <= last:
            ends[(r.cls, r.iteration, r.name)] = r.end
    classes = {k[0] for k in ends}
    least = None
    for cls in classes:
        total = 0.0
        for r in run.comm:
            if channel_family(r.channel) == CHANNEL and first < r.iteration <= last:
                end = ends.get((cls, r.iteration, beside_of(r.name)))
                if end is not None:
                    total += max(0.0, r.end - end)
        least = total / n if least is None else min(least, total / n)
    return least or 0.0


def cp_groups(n_gpus: int, tp: int, c: int) -> tuple:
    """Context-parallel rank groups in Megatron's tp-cp-dp order (parallel_state.py): rank
    t + TP (c + C d) for TP index t, CP index c, data-parallel index d; a group is the C
    ranks of one (t, d), stride TP. (Their union per t, every TP-th rank, is the
    data-parallel group with CP that the gradients are reduced over: tp_groups' "".)"""
    return tuple(tuple(t + tp * (j + c * d) for j in range(c))
                 for d in range(n_gpus // (tp * c)) for t in range(tp))


def _transfers_text(transfers) -> str:
    """'1 KV all-gather of 4 chunks + 4 dKV (FP32)': one direction's transfers, counted."""
    counts: dict = {}
    for x in transfers:
        key = (x.what, x.chunks, x.fp32)
        counts[key] = counts.get(key, 0) + 1
    return " + ".join(f"{n} {what}" + (f" of {chunks} chunks" if chunks > 1 else "")
                      + (" (FP32)" if fp32 else "") for (what, chunks, fp32), n in counts.items())


def cp_label(model, run, per_micro_batch: bool) -> str:
    """What the output says about the ring: its transfers and the exposed time the
    simulated timeline gives (engine.cp_plan.exposed_seconds)."""
    cp = model.context_parallel
    blocks = [l for l in model.layers if l.kind in BLOCK_KINDS]
    causal = any(l.kind == "transformer_decoder" for l in blocks)
    kv = kv_chunk_bytes(model, blocks[0])
    if cp.torch:
        said = "; ".join(f"{way} {_transfers_text(cp.transfers(fwd))}"
                         for way, fwd in (("forward", True), ("backward", False)))
        moved = (f"{said} per block, {kv / 2**20:.2f} MiB per 16-bit KV chunk (K and V at the "
                 f"query width), beside {cp.size} SDPA calls each way, merged in FP32")
    else:
        f, b = len(cp.exchanges(True)), len(cp.exchanges(False))
        moved = (f"{f} forward and {b} backward KV/dKV exchanges of {kv / 2**20:.2f} MiB per KV "
                 f"chunk per block beside {cp.size} attention steps each way")
    return (f"{cp.label(causal)}: {model.seq} of {model.sample_seq} tokens per rank, {moved} "
            f"over {len(blocks)} blocks; exposed "
            f"{exposed_seconds(run) * 1e3:.2f} ms per {'micro-batch' if per_micro_batch else 'step'} (simulated)")

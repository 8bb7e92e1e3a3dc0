"""Tensor parallelism's collectives in one iteration's step plan (workload.tensor_parallel
says what Megatron communicates; this module places it).

Every TP collective runs on channel "tp" over the TP groups (engine.run gives the engine
the groups: world / K groups of K consecutive ranks, all at once, their flows on the shared
network beside the data-parallel traffic). Placement on the compute stream:
  * a forward's collectives (a block's, the vocab-parallel embedding's reduction, the
    cross-entropy's two small all-reduces) run after the layer's forward, one after the
    other, and the next stream op waits for the last: they block;
  * a block's backward collectives that Megatron does not overlap (sequence parallelism's
    all-gathers of the reduce-scatters' output gradients; a checkpointed block's forward
    collectives, run again in its recompute) run before the block's backward, which waits;
  * the overlapped ones (the column-parallel GEMMs' input-gradient all-reduces, or with
    sequence parallelism their input re-gathers and gradient reduce-scatters) start when
    the block's backward less those GEMMs ends and run beside an extra compute op
    ("tp-wgrad": the QKV and MLP-up weight-gradient GEMMs, plus their input-gradient GEMMs
    with sequence parallelism); the op after it waits for them. The two halves of a block
    are folded: both GEMMs' work hides both halves' collectives.
  * the output layer's input gradient (all-reduce, or reduce-scatter with sequence
    parallelism) blocks after its backward; with sequence parallelism its input is
    all-gathered before its forward, and the embedding's output gradient all-gathered
    before its backward.
Under --dtype fp8 a block's all-gathers move FP8, 1 byte per element (workload.fp8_comm
gives the sources); its reduce-scatters and every other TP collective stay 16-bit.
"""

from __future__ import annotations

from dataclasses import replace

from ..plan.names import Role, bwd_name, extra_name, fwd_name
from ..plan.ops import CommOp, ComputeOp
from ..workload.fp8_comm import tp_gather_bytes
from ..workload.tensor_parallel import BLOCK_KINDS

CHANNEL = "tp"
WGRAD_TAG = "tp-wgrad"
FP32 = 4


def _overlap_kernels(layer, sequence: bool) -> list:
    """The backward kernels beside which Megatron runs a block's overlapped collectives:
    the column-parallel GEMMs' (QKV, MLP up) weight gradients, and with sequence
    parallelism their input gradients too."""
    kinds = (".wgrad", ".dgrad") if sequence else (".wgrad",)
    return [k for k in layer.kernels.bwd
            if any(k.name.endswith(part + kind) for part in (".qkv", "ffn.up") for kind in kinds)]


def add_tensor_parallel(stream: list[ComputeOp], ctx) -> tuple[list[ComputeOp], list[CommOp], dict, dict]:
    """(stream with the tp-wgrad ops, the TP CommOps, compute OpId -> [(comm, 0)] waits,
    {a block's bwd OpId: its tp-wgrad OpId}: the op after which its weight gradients are
    all computed, which data-parallel collectives must then wait for)."""
    model = ctx.model
    tp = model.tensor_parallel
    if not tp.on:
        return stream, [], {}, {}
    moved: dict = {}
    elem = max(model.dtype_bytes, 2)
    act = model.batch * model.seq * elem   # b x s x h elements, per h below
    gather_elem = tp_gather_bytes(model.dtype, elem)
    tokens = model.batch * model.seq
    stream = list(stream)
    comms: list[CommOp] = []
    waits: dict = {}

    def chain(tag: str, ops: list[tuple[str, float]], after) -> str | None:
        """Comms one after another, the first ready after `after` (an OpId); the last's name."""
        prev = None
        for i, (op, nbytes) in enumerate(ops):
            name = f"tp:{tag}:{i}"
            dep = ((after, 0),) if prev is None else ((prev, 0),)
            comms.append(CommOp(name=name, op=op, nbytes=float(nbytes), category="activation",
                                channel=CHANNEL, ready_after=dep, priority=-1.0, tensors=(),
                                group=CHANNEL))
            prev = name
        return prev

    def sized(op: str, h: int) -> int:
        """A block collective's bytes over b x s x h elements: its all-gathers at their own
        element width (workload.fp8_comm), the rest at the activations'."""
        return tokens * h * (gather_elem if op == "all_gather" else elem)

    def wait(op_id, comm: str | None) -> None:
        if op_id is not None and comm is not None:
            waits.setdefault(op_id, []).append((comm, 0))

    def after(op_id):
        ids = [s.id for s in stream]
        i = ids.index(op_id)
        return ids[i + 1] if i + 1 < len(ids) else None

    def before(op_id):
        ids = [s.id for s in stream]
        i = ids.index(op_id)
        return ids[i - 1] if i > 0 else None

    recomputed = set(model.recomputed)
    owners = {model.table_owner(t.name) for t in model.tables}
    for layer in model.layers:
        name, h = layer.name, None
        ids = {s.id for s in stream}
        if fwd_name(name) not in ids:
            continue
        if layer.kind in BLOCK_KINDS:
            h = layer.input_bytes // max(model.dtype_bytes, 1) // tokens
            fwd_ops = [(op, sized(op, h)) for op, _ in tp.block_collectives(True)]
            bwd = tp.block_collectives(False)
            last = chain(f"fwd:{name}", fwd_ops, fwd_name(name))
            wait(after(fwd_name(name)), last)
            blocking = [(op, sized(op, h)) for op, o in bwd if not o]
            if name in recomputed:
                blocking = fwd_ops + blocking
            prior = before(bwd_name(name))
            if blocking and prior is not None:
                wait(bwd_name(name), chain(f"bwd:{name}", blocking, prior))
            hidden = [(op, sized(op, h)) for op, o in bwd if o]
            i = next(j for j, s in enumerate(stream) if s.id == bwd_name(name))
            op = stream[i]
            w = min(ctx.kernel_seconds(_overlap_kernels(layer, tp.sequence)), op.duration)
            extra = ComputeOp(extra_name(WGRAD_TAG, name), w)
            stream[i] = replace(op, duration=op.duration - w)
            stream.insert(i + 1, extra)
            moved[bwd_name(name)] = extra.id
            last = chain(f"bwd-overlap:{name}", hidden, bwd_name(name))
            wait(after(extra.id), last)
        elif layer.kind == "embedding" and name in owners:
            size = act * _dim(model, layer)
            op = "reduce_scatter" if tp.sequence else "all_reduce"
            wait(after(fwd_name(name)), chain(f"fwd:{name}", [(op, size)], fwd_name(name)))
            if tp.sequence and before(bwd_name(name)) is not None:
                wait(bwd_name(name), chain(f"bwd:{name}", [("all_gather", size)], before(bwd_name(name))))
        elif layer.kind == "output_projection":
            size = act * _dim(model, layer)
            if tp.sequence and before(fwd_name(name)) is not None:
                wait(fwd_name(name), chain(f"pre:{name}", [("all_gather", size)], before(fwd_name(name))))
            op = "reduce_scatter" if tp.sequence else "all_reduce"
            nxt = after(bwd_name(name))
            if nxt is not None and nxt.role is not Role.UPDATE:
                wait(nxt, chain(f"bwd:{name}", [(op, size)], bwd_name(name)))
        elif layer.kind == "softmax_loss":
            # Megatron's vocab-parallel cross-entropy: the logits' max, then the target
            # logit and the sum of exponentials in one all-reduce, FP32 per token
            ops = [("all_reduce", FP32 * tokens), ("all_reduce", 2 * FP32 * tokens)]
            wait(after(fwd_name(name)), chain(f"fwd:{name}", ops, fwd_name(name)))
    return stream, comms, waits, moved


def _dim(model, layer) -> int:
    """The hidden size an embedding or output layer moves: its table's dim."""
    if layer.table is not None:
        return model.table(layer.table).dim
    blocks = [l for l in model.layers if l.kind in BLOCK_KINDS]
    return blocks[0].input_bytes // max(model.dtype_bytes, 1) // model.tokens_per_gpu


def tp_groups(n_gpus: int, k: int, base: int = 0) -> dict:
    """The rank groups of n_gpus ranks from `base` under tensor parallelism K (Megatron's
    tp-cp-dp-pp order): TP groups of K consecutive ranks (key CHANNEL); data-parallel groups
    of the ranks with the same TP index, every K-th rank (key "")."""
    return {"": tuple(tuple(range(base + t, base + n_gpus, k)) for t in range(k)),
            CHANNEL: tuple(tuple(range(g, g + k)) for g in range(base, base + n_gpus, k))}

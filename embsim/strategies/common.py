"""Pieces the strategies share: the replicated (AllReduced) part of every plan, which
tables really have a sparse gradient, and their notes."""

from __future__ import annotations

import math

from ..plan.names import bwd_name
from ..plan.ops import SyncTensor
from ..plan.context import TableTraffic
from ..workload.compute import optimizer_kernels
from ..workload.embedding_kernels import embedding_kernels

ID_STAGING_S = 5e-6  # one small kernel/copy to stage the batch's ids (one launch)


def dense_sync(ctx) -> list[SyncTensor]:
    """AllReduce of every layer's gradient as DDP does it: dense, a table's included
    (ready when its owner's backward ends, the last to add to it). Parameters are owned
    once: a table's by its first user, a tied head owns only its bias. Each gradient is
    all-reduced in its parameters' precision (Model.grad_elem_bytes, precision.param_bytes):
    FP32 under autocast, 16-bit under o2 unless the optimizer says fp32_gradients."""
    model = ctx.model
    return [SyncTensor(name=f"grad:{layer.name}", layer=layer.name, op="all_reduce",
                       nbytes=float(layer.params * model.grad_elem_bytes(layer)), category="dense",
                       ready_after=bwd_name(layer.name))
            for layer in model.layers if layer.params > 0]


def sparse_tables(ctx) -> list[TableTraffic]:
    """Tables whose gradient really is sparse, in the order their owning layers run
    (engine.context.table_traffic)."""
    return [t for t in ctx.tables.values() if not t.dense_grad]


def replicated_sync(ctx) -> list[SyncTensor]:
    """AllReduce of everything a sparse strategy leaves replicated: dense layers, a tied
    head's own bias, and whole tables whose gradient is dense (exactly as allreduce)."""
    sparse_owners = {t.layer for t in sparse_tables(ctx)}
    return [t for t in dense_sync(ctx) if t.layer not in sparse_owners]


def replicated_update_time(ctx) -> dict:
    sparse_owners = {t.layer for t in sparse_tables(ctx)}
    return {l.name: ctx.layer_update[l.name] for l in ctx.model.layers
            if l.params > 0 and l.name not in sparse_owners}


def dense_table_notes(ctx, strategy: str) -> list[str]:
    return [f"{strategy}: table {t.table} has a dense gradient (a full softmax tied to it): "
            f"AllReduced densely, nothing to gain from sparsity"
            for t in ctx.tables.values() if t.dense_grad]


def sharded_update_time(ctx, n: int) -> dict:
    """Optimizer seconds per layer when each GPU steps 1/n of every parameter (FSDP's
    shards, the distributed optimizer's): the optimizer kernels on the layer's shard."""
    update = {}
    for l in ctx.model.layers:
        if l.params > 0:
            shard = math.ceil(l.params / n)
            update[l.name] = ctx.kernel_seconds(optimizer_kernels(
                shard, ctx.model, tensors=getattr(l.kernels, "param_tensors", None),
                table=l.kind == "embedding")) if ctx.kernel_seconds else ctx.layer_update[l.name] / n
    return update


def dedup_expansion_seconds(ctx, name: str, lookups: float, distinct: float, dim: int,
                            elem_bytes: int) -> tuple[float, float]:
    """(forward, backward) seconds on a GPU that sent each distinct row it reads once: the
    received distinct rows expanded back to one per lookup (a gather through the inverse
    index: torch.unique's inverse, tf.unique's idx, then tf.gather), and in backward the
    lookups' gradients summed into the distinct rows before they leave (the gather's
    gradient: PyTorch's embedding backward, TensorFlow's unsorted_segment_sum)."""
    if lookups <= 0 or distinct <= 0:
        return 0.0, 0.0
    fwd, dense_bwd, _ = embedding_kernels(f"{name}.expand", round(lookups), dim, max(1, round(distinct)),
                                          elem_bytes, framework=ctx.model.framework)
    return ctx.kernel_seconds(fwd), ctx.kernel_seconds(dense_bwd)


def sent_shares(t, users, lookups: float, dedup: bool) -> tuple[float, float]:
    """(ids, rows): the share of a GPU's looked-up ids, and of its rows, that leave it for
    table `t` read by `users` (`lookups` rows a batch). With dedup each distinct row goes once;
    a table a layer pools into bags keeps every row (its owner needs each lookup's row for
    the bag) and only its ids shrink."""
    ids = t.unique_per_gpu / lookups if dedup else 1.0
    return ids, (1.0 if any(u.pooled for u in users) else ids)


def column_split_note(tables, n: int) -> str | None:
    """shard=cols gives every GPU D/N of each row: whole columns only when N divides D. The
    model takes even shares; say when the real split cannot be one (D < N: some GPUs would
    hold no column of a table) or is uneven (the GPUs with one column more set the pace)."""
    if n < 2:
        return None
    thin = sorted({t.dim for t in tables if t.dim < n})
    uneven = sorted({t.dim for t in tables if t.dim >= n and t.dim % n})
    if not thin and not uneven:
        return None
    parts = []
    if thin:
        count = sum(t.dim < n for t in tables)
        parts.append(f"{count} table(s) of dim {', '.join(map(str, thin))} have fewer columns than the "
                     f"{n} GPUs (modelled as {min(thin) / n:.2g} of a column each, which no real "
                     f"column split gives)")
    if uneven:
        parts.append(f"dim {', '.join(map(str, uneven))} does not divide by {n} (modelled as even "
                     f"shares; the GPUs holding one column more are up to "
                     f"{max(math.ceil(d / n) / (d / n) for d in uneven) - 1:.0%} slower)")
    return (f"embrace shard=cols: {'; '.join(parts)}; --option shard=rows, hashed or tables places "
            f"rows or whole tables instead")

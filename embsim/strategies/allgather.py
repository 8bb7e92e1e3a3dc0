"""allgather: sparse embedding gradients as (index, row) pairs AllGathered (Horovod's
sparse path, AGsparse). Every GPU receives every other GPU's rows, so the volume per GPU
grows with the GPU count: (N-1) x U x (D x dtype + 8) B.

Each GPU coalesces its duplicate lookups before sending (U = distinct rows its batch
touched); stock Horovod sends one pair per lookup, which is larger still. Tables whose
gradient is dense (a full softmax tied to them) are AllReduced densely, as DDP does.

The helpers below are shared by the sparse strategies (ps, s2reducer, embrace).
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..engine.build import bwd_name
from ..engine.ops import SyncTensor
from ..workload.memory import MemoryBreakdown, memory_per_gpu
from .base import STRATEGIES, Strategy, StrategyPlan, TableTraffic
from .common import dense_sync

INDEX_BYTES = 8  # int64 row ids (PyTorch sparse COO indices)


def row_bytes(model, dim: int) -> float:
    """One (index, row) pair of a sparse gradient."""
    return dim * model.dtype_bytes + INDEX_BYTES


def sparse_tables(ctx) -> list[TableTraffic]:
    """Tables whose gradient really is sparse, in the model's table order."""
    return [t for t in ctx.tables.values() if not t.dense_grad]


def sparse_users(ctx, traffic: TableTraffic) -> list:
    """Layers that read the table sparsely (lookups, sampled softmax), forward order."""
    return [l for l in ctx.model.layers if l.table == traffic.table and l.sparse]


def rows_touched(ctx, layer) -> float:
    """Rows (with repeats) one GPU's batch reads through a sparse layer."""
    table = ctx.model.table(layer.table)
    return layer.grad_bytes / row_bytes(ctx.model, table.dim)


def replicated_sync(ctx) -> list[SyncTensor]:
    """AllReduce of everything a sparse strategy leaves replicated: dense layers, a tied
    head's own bias, and whole tables whose gradient is dense (exactly as allreduce)."""
    sparse_owners = {t.layer for t in sparse_tables(ctx)}
    return [t for t in dense_sync(ctx, include_tables=True) if t.layer not in sparse_owners]


def replicated_update_time(ctx) -> dict:
    sparse_owners = {t.layer for t in sparse_tables(ctx)}
    return {l.name: ctx.layer_update[l.name] for l in ctx.model.layers
            if l.params > 0 and l.name not in sparse_owners}


def dense_table_notes(ctx, strategy: str) -> list[str]:
    return [f"{strategy}: table {t.table} has a dense gradient (a full softmax tied to it): "
            f"AllReduced densely, nothing to gain from sparsity"
            for t in ctx.tables.values() if t.dense_grad]


def memory_with_sharded_tables(model, sharded: dict[str, int], sparse_grads: bool,
                               extra: dict[str, float] | None = None) -> MemoryBreakdown:
    """memory_per_gpu with only some tables sharded (table name -> shards), the others
    replicated; `extra` adds named buffers (counted as gradients/communication buffers).
    Per-table bytes follow workload.memory's own rules: the difference between a
    replicated and a sharded breakdown of the same model is the table's share."""
    mem = memory_per_gpu(model, sparse_embedding_grads=sparse_grads)
    fields = ("params", "grads", "optimizer_state", "master_weights")
    for name, shards in sharded.items():
        if shards <= 1:
            continue
        rep, sh = _table_fields(model, name, 1, sparse_grads), _table_fields(model, name, shards, sparse_grads)
        mem = replace(mem, **{f: getattr(mem, f) - rep[f] + sh[f] for f in fields},
                      by_component={**mem.by_component, name: sh["total"]})
    for name, nbytes in (extra or {}).items():
        mem = replace(mem, grads=mem.grads + int(math.ceil(nbytes)),
                      by_component={**mem.by_component, name: int(math.ceil(nbytes))})
    return mem


def _table_fields(model, table_name: str, shards: int, sparse_grads: bool) -> dict:
    d, opt = model.dtype_bytes, model.optimizer
    table = model.table(table_name)
    rows = -(-table.vocab // shards)
    elements = rows * table.dim
    dense_grad = any(l.table == table_name and not l.sparse for l in model.layers)
    if sparse_grads and not dense_grad:
        g = sum(l.grad_bytes for l in model.layers if l.table == table_name and l.sparse)
        g = min(-(-g // shards), d * elements + 8 * rows)
    else:
        g = d * elements
    out = {"params": d * elements, "grads": g, "optimizer_state": opt.state_bytes_per_param * elements,
           "master_weights": opt.master_bytes_per_param * elements}
    out["total"] = sum(out.values())
    return out


@STRATEGIES.register("allgather")
class AllGatherStrategy(Strategy):
    description = "sparse (index, row) gradients AllGathered (Horovod sparse / AGsparse)"
    embedding_payload = "rows"   # what embrace-2d may split: gradient rows

    def plan(self, ctx):
        model, n = ctx.model, ctx.n_gpus
        sync = replicated_sync(ctx)
        update = replicated_update_time(ctx)
        buffers = {}
        for t in sparse_tables(ctx):
            per_gpu = t.unique_per_gpu * row_bytes(model, t.dim)
            sync.append(SyncTensor(name=f"allgather:{t.layer}", layer=t.layer, op="all_gather",
                                   nbytes=n * per_gpu, category="embedding",
                                   ready_after=bwd_name(t.layer)))
            # every GPU applies the union of all GPUs' rows to its replica
            update[t.layer] = ctx.sparse_update(t.layer, t.unique_union)
            buffers[f"allgather receive buffer ({t.table})"] = n * per_gpu
        notes = dense_table_notes(ctx, "allgather")
        return StrategyPlan(sync=tuple(sync), update_time=update,
                            memory=memory_with_sharded_tables(model, {}, True, buffers),
                            notes=tuple(notes))

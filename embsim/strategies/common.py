"""Pieces several strategies share: the dense layers' gradients, memory accounting."""

from __future__ import annotations

from ..engine.build import bwd_name
from ..engine.ops import SyncTensor
from .base import MemoryUse


def table_owner(model, table: str) -> str:
    """The layer that owns a table's parameters: the first (in forward order) that uses it.
    Its backward is the last to add to the table's gradient (backward runs in reverse)."""
    return next(l.name for l in model.layers if l.table == table and l.params > 0)


def dense_sync(ctx, include_tables: bool) -> list[SyncTensor]:
    """AllReduce tensors for dense layers (and, with include_tables, for whole tables,
    as DDP does: a table's dense gradient is ready when its owner's backward ends)."""
    model = ctx.model
    out = []
    for layer in model.layers:
        if layer.params <= 0:
            continue
        if layer.table is not None:
            if not include_tables:
                continue
            nbytes = model.table(layer.table).params * model.dtype_bytes
        else:
            nbytes = layer.params * model.dtype_bytes
        out.append(SyncTensor(name=f"grad:{layer.name}", layer=layer.name, op="all_reduce",
                              nbytes=float(nbytes), category="dense",
                              ready_after=bwd_name(layer.name)))
    return out


def tied_tables(model) -> set[str]:
    """Tables reused as an output projection: their gradient is dense (every row gets a
    softmax gradient), whatever the strategy does for the lookup side."""
    return {t.name for t in model.tables if t.tied_to}


def replicated_memory(ctx, dense_embedding_grad: bool, table_fraction: float = 1.0,
                      sparse_grad_rows: float = 0.0, extra: float = 0.0) -> MemoryUse:
    """Per-GPU memory: dense layers replicated; tables replicated (table_fraction=1) or
    sharded (1/N); the embedding gradient dense (V*D) or as touched rows only."""
    model = ctx.model
    b = model.dtype_bytes
    opt = model.optimizer.state_bytes_per_param + model.optimizer.master_bytes_per_param
    table_params = model.embedding_params * table_fraction
    params = model.dense_params + table_params
    if dense_embedding_grad:
        grads = model.dense_params + table_params
    else:
        grads = model.dense_params + sparse_grad_rows * max((t.dim for t in model.tables), default=0)
    activations = sum(l.activation_bytes for l in model.layers)
    return MemoryUse(parameters=params * b, gradients=grads * b, optimizer=params * opt,
                     activations=float(activations), other=float(extra))

"""Pieces several strategies share: the dense layers' gradients, memory accounting."""

from __future__ import annotations

from ..engine.build import bwd_name
from ..engine.ops import SyncTensor


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
        if layer.table is not None and not include_tables:
            continue
        # params are owned once: a table's by its first user, a tied layer owns only its bias
        nbytes = layer.params * model.dtype_bytes
        out.append(SyncTensor(name=f"grad:{layer.name}", layer=layer.name, op="all_reduce",
                              nbytes=float(nbytes), category="dense",
                              ready_after=bwd_name(layer.name)))
    return out


def tied_tables(model) -> set[str]:
    """Tables reused as an output projection: their gradient is dense (every row gets a
    softmax gradient), whatever the strategy does for the lookup side."""
    return {t.name for t in model.tables if t.tied_to}

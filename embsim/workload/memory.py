"""Memory per GPU: parameters, gradients, optimizer state, master weights, activations.

Embedding tables may be replicated (every GPU holds the whole table: allreduce, allgather)
or sharded over `embedding_shards` GPUs (EmbRace-style model parallelism, parameter-server
shards); dense layers may be sharded ZeRO-style over `dense_shards` (1 = replicated).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import InputError
from .model import Model


@dataclass(frozen=True)
class MemoryBreakdown:
    params: int
    grads: int
    optimizer_state: int
    master_weights: int
    activations: int
    by_component: dict = field(default_factory=dict, hash=False)   # "dense" | table -> bytes

    @property
    def total(self) -> int:
        return (self.params + self.grads + self.optimizer_state + self.master_weights
                + self.activations)

    def as_dict(self) -> dict:
        return {"params": self.params, "grads": self.grads,
                "optimizer_state": self.optimizer_state, "master_weights": self.master_weights,
                "activations": self.activations, "total": self.total,
                "by_component": dict(self.by_component)}


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def memory_per_gpu(model: Model, embedding_shards: int = 1, dense_shards: int = 1,
                   sparse_embedding_grads: bool = False) -> MemoryBreakdown:
    """Bytes one GPU holds during a training step.

    sparse_embedding_grads: keep each table's gradient as (index, row) pairs, one per
    lookup (PyTorch sparse=True), instead of a dense vocab x dim buffer. A tied output
    projection with a full softmax touches every row, so its table stays dense.
    """
    for flag, value in (("embedding_shards", embedding_shards), ("dense_shards", dense_shards)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InputError(f"{flag}: must be an integer >= 1, got {value!r}")
    d = model.dtype_bytes
    opt = model.optimizer
    per_param = d + opt.state_bytes_per_param + opt.master_bytes_per_param

    dense = _ceil_div(model.dense_params, dense_shards)
    params = d * dense
    state = opt.state_bytes_per_param * dense
    master = opt.master_bytes_per_param * dense
    grads = d * dense
    components = {"dense": dense * (per_param + d)}

    for table in model.tables:
        rows = _ceil_div(table.vocab, embedding_shards)
        elements = rows * table.dim
        dense_grad = any(layer.table == table.name and not layer.sparse
                         for layer in model.layers)
        if sparse_embedding_grads and not dense_grad:
            g = sum(layer.grad_bytes for layer in model.layers
                    if layer.table == table.name and layer.sparse)
            g = min(_ceil_div(g, embedding_shards), d * elements + 8 * rows)
        else:
            g = d * elements
        params += d * elements
        state += opt.state_bytes_per_param * elements
        master += opt.master_bytes_per_param * elements
        grads += g
        components[table.name] = elements * per_param + g

    activations = sum(layer.activation_bytes for layer in model.layers)
    components["activations"] = activations
    return MemoryBreakdown(params=params, grads=grads, optimizer_state=state,
                           master_weights=master, activations=activations,
                           by_component=components)

"""Memory per GPU: parameters, gradients, optimizer state, master weights, activations.

Embedding tables may be replicated (every GPU holds the whole table: allreduce, allgather)
or sharded over `embedding_shards` GPUs (EmbRace-style model parallelism, parameter-server
shards); dense layers may be sharded ZeRO-style over `dense_shards` (1 = replicated).

Buffers are what a strategy or wrapper holds beside those: a strategy's own (gathered
parameters, a worker cache), and the data-parallel wrapper's gradient buckets, added once
the scheduler has bucketed the gradients (MemoryBreakdown.with_buffer): PyTorch DDP's
default keeps one flat tensor per bucket as large as the gradients it carries,
gradient_as_bucket_view keeps none, apex DDP a flat copy of each bucket in flight
(schedulers.ddp_passes, with the sources).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from ..errors import InputError
from .host_memory import HostMemoryNeed
from .model import INDEX_BYTES, Model


@dataclass(frozen=True)
class MemoryBreakdown:
    params: int
    grads: int
    optimizer_state: int
    master_weights: int
    activations: int
    by_component: dict = field(default_factory=dict, hash=False)   # "dense" | table -> bytes
    buffers: int = 0      # a strategy's own: gathered parameters, communication buffers
    # host (CPU) memory a node needs for what the strategy keeps off its GPUs (parameter
    # servers' shards, tables in host memory); None: nothing. Not part of `total` (HBM).
    host: HostMemoryNeed | None = None

    @property
    def total(self) -> int:
        return (self.params + self.grads + self.optimizer_state + self.master_weights
                + self.activations + self.buffers)

    def with_buffer(self, name: str, nbytes: float) -> "MemoryBreakdown":
        """The same with one more named buffer (a data-parallel wrapper's gradient buckets:
        schedulers.ddp_passes.bucket_memory); 0 bytes: unchanged."""
        extra = int(math.ceil(nbytes))
        if extra <= 0:
            return self
        parts = dict(self.by_component)
        parts[name] = parts.get(name, 0) + extra
        return replace(self, buffers=self.buffers + extra, by_component=parts)

    def as_dict(self) -> dict:
        return {"params": self.params, "grads": self.grads,
                "optimizer_state": self.optimizer_state, "master_weights": self.master_weights,
                "activations": self.activations, "buffers": self.buffers, "total": self.total,
                "by_component": dict(self.by_component)}


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def memory_per_gpu(model: Model, embedding_shards: int | Mapping[str, int] = 1, dense_shards: int = 1,
                   sparse_embedding_grads: bool = False,
                   buffers: Mapping[str, float] | None = None,
                   optimizer_shards: int = 1, host: HostMemoryNeed | None = None) -> MemoryBreakdown:
    """Bytes one GPU holds during a training step.

    embedding_shards: over how many GPUs every table is sharded, or per table name
    (tables not named stay replicated; 0: this GPU holds none of the table, as under a
    table-wise placement that put it elsewhere).
    sparse_embedding_grads: keep each table's gradient as (index, row) pairs, one per
    lookup (PyTorch sparse=True), instead of a dense vocab x dim buffer. A tied output
    projection with a full softmax touches every row, so its table stays dense.
    buffers: named buffers a strategy adds (FSDP's gathered parameters and unsharded
    gradients, a parameter server's worker cache), counted apart from the gradients.
    optimizer_shards: over how many GPUs the optimizer state and FP32 master weights alone
    are sharded, parameters and gradients staying whole (Megatron's distributed optimizer).
    host: what the node's host memory holds for the strategy, carried with the breakdown.
    """
    per_table = isinstance(embedding_shards, Mapping)
    shards_of = (dict(embedding_shards) if per_table
                 else {t.name: embedding_shards for t in model.tables})
    # a per-table 0 says this GPU holds none of that table; a count for every table is >= 1
    checks = [("dense_shards", dense_shards, 1), ("optimizer_shards", optimizer_shards, 1)] + (
        [(f"embedding_shards[{k}]", v, 0) for k, v in shards_of.items()] if per_table
        else [("embedding_shards", embedding_shards, 1)])
    for flag, value, least in checks:
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise InputError(f"{flag}: must be an integer >= {least}, got {value!r}")
    # parameters and gradients as the AMP style stores them (precision.param_bytes: FP32
    # under autocast, with no master copy; 16-bit plus FP32 master weights under o2)
    d = model.dense_param_bytes
    opt = model.optimizer
    dense_master = model.master_bytes()
    k = optimizer_shards

    dense = _ceil_div(model.dense_params, dense_shards)
    params = d * dense
    state = _ceil_div(opt.state_bytes_per_param * dense, k)
    master = _ceil_div(dense_master * dense, k)
    # the gradient buffer in the gradients' own precision (FP32 where the optimizer keeps
    # FP32 gradients, e.g. Megatron's grad_reduce_in_fp32; Model.grad_elem_bytes)
    g_bytes = model.grad_elem_bytes()
    grads = g_bytes * dense
    components = {"dense": dense * (d + g_bytes) + state + master}
    # tables in their own precision (FP32 under autocast: no master copy)
    t = model.table_bytes
    table_master = 0 if t >= 4 else opt.master_bytes_per_param

    for table in model.tables:
        shards = shards_of.get(table.name, 1)
        rows = _ceil_div(table.vocab, shards) if shards else 0
        elements = rows * table.dim
        if not shards:
            g = 0
        elif sparse_embedding_grads and not model.dense_gradient(table.name):
            g = sum(layer.grad_bytes for layer in model.sparse_users(table.name))
            g = min(_ceil_div(g, shards), t * elements + INDEX_BYTES * rows)
        else:
            g = (4 if opt.fp32_gradients else t) * elements
        params += t * elements
        table_state = _ceil_div(opt.state_bytes_per_param * elements, k)
        table_master_bytes = _ceil_div(table_master * elements, k)
        state += table_state
        master += table_master_bytes
        grads += g
        components[table.name] = elements * t + table_state + table_master_bytes + g

    extra = 0
    for name, nbytes in (buffers or {}).items():
        extra += int(math.ceil(nbytes))
        components[name] = int(math.ceil(nbytes))
    activations = activation_bytes(model)
    components["activations"] = activations
    return MemoryBreakdown(params=params, grads=grads, optimizer_state=state,
                           master_weights=master, activations=activations,
                           by_component=components, buffers=extra, host=host)


def activation_bytes(model: Model) -> int:
    """Activations held for backward: every layer's, but a checkpointed block holds its input
    only, plus one block's full set while its recompute lives; under selective recompute a
    block holds all but its attention cores' scores, plus one block's while its core
    recomputes (embsim.workload.recompute)."""
    recomputed, cores = set(model.recomputed), set(model.core_recomputed)

    def kept_by(layer) -> int:
        if layer.name in recomputed:
            return layer.input_bytes
        return layer.activation_bytes - (layer.core_saved if layer.name in cores else 0)

    kept = sum(kept_by(layer) for layer in model.layers)
    live = max([layer.activation_bytes for layer in model.layers if layer.name in recomputed]
               + [layer.core_saved for layer in model.layers if layer.name in cores], default=0)
    return kept + live

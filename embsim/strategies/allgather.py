"""allgather: sparse embedding gradients as (index, row) pairs AllGathered (Horovod's
sparse path, AGsparse). Every GPU receives every other GPU's rows, so the volume per GPU
grows with the GPU count: (N-1) x U x (D x dtype + 8) B.

`gather_rows=unique` (default): each GPU coalesces its duplicate lookups before sending
(U = distinct rows its batch touched). `gather_rows=lookups`: stock Horovod, which sends one
pair per lookup: TensorFlow's gather gradient is an IndexedSlices with one row per looked-up
id, duplicates included, and Horovod's allreduce of an IndexedSlices is two allgathers, of its
values and of its indices, with no coalescing (horovod/tensorflow/__init__.py, `allreduce`:
"For IndexedSlices, do two allgathers instead of an allreduce"; sparse_as_dense=False is
hvd.DistributedOptimizer's default). Either way the optimizer then steps the union of the
gathered rows (Keras OptimizerV2 sums duplicate indices before a sparse apply). Tables whose
gradient is dense (a full softmax tied to them) are AllReduced densely, as DDP does.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..plan.names import bwd_name
from ..plan.ops import SyncTensor
from ..workload.memory import memory_per_gpu
from ..plan.traits import Payload
from .base import STRATEGIES, Strategy, StrategyPlan
from .common import dense_table_notes, replicated_sync, replicated_update_time, sparse_tables

GATHER_ROWS = ("unique", "lookups")   # coalesced rows | one per lookup (stock Horovod)


@dataclass(frozen=True)
class AllGatherOptions:
    gather_rows: str = "unique"

    def __post_init__(self):
        if self.gather_rows not in GATHER_ROWS:
            raise InputError(f"--option gather_rows={self.gather_rows!r}: expected one of "
                             f"{', '.join(GATHER_ROWS)}")


@STRATEGIES.register("allgather")
class AllGatherStrategy(Strategy):
    description = "sparse (index, row) gradients AllGathered (Horovod sparse / AGsparse)"
    embedding_payload = Payload.ROWS   # gradient rows
    Options = AllGatherOptions

    def plan(self, ctx):
        model, n = ctx.model, ctx.n_gpus
        sync = replicated_sync(ctx)
        update = replicated_update_time(ctx)
        buffers = {}
        for t in sparse_tables(ctx):
            rows = t.lookups_per_gpu if self.options.gather_rows == "lookups" else t.unique_per_gpu
            per_gpu = rows * model.row_bytes(t.table)
            sync.append(SyncTensor(name=f"allgather:{t.layer}", layer=t.layer, op="all_gather",
                                   nbytes=n * per_gpu, category="embedding",
                                   ready_after=bwd_name(t.layer)))
            # every GPU applies the union of all GPUs' rows to its replica
            update[t.layer] = ctx.sparse_update(t.layer, t.unique_union)
            buffers[f"allgather receive buffer ({t.table})"] = n * per_gpu
        notes = dense_table_notes(ctx, "allgather")
        return StrategyPlan(sync=tuple(sync), update_time=update,
                            memory=memory_per_gpu(model, sparse_embedding_grads=True, buffers=buffers),
                            notes=tuple(notes))

"""allgather: sparse embedding gradients as (index, row) pairs AllGathered (Horovod's
sparse path, AGsparse). Every GPU receives every other GPU's rows, so the volume per GPU
grows with the GPU count: (N-1) x U x (D x dtype + 8) B.

Each GPU coalesces its duplicate lookups before sending (U = distinct rows its batch
touched); stock Horovod sends one pair per lookup, which is larger still. Tables whose
gradient is dense (a full softmax tied to them) are AllReduced densely, as DDP does.
"""

from __future__ import annotations

from ..plan.names import bwd_name
from ..plan.ops import SyncTensor
from ..workload.memory import memory_per_gpu
from ..plan.traits import Payload
from .base import STRATEGIES, Strategy, StrategyPlan
from .common import dense_table_notes, replicated_sync, replicated_update_time, sparse_tables

@STRATEGIES.register("allgather")
class AllGatherStrategy(Strategy):
    description = "sparse (index, row) gradients AllGathered (Horovod sparse / AGsparse)"
    embedding_payload = Payload.ROWS   # gradient rows

    def plan(self, ctx):
        model, n = ctx.model, ctx.n_gpus
        sync = replicated_sync(ctx)
        update = replicated_update_time(ctx)
        buffers = {}
        for t in sparse_tables(ctx):
            per_gpu = t.unique_per_gpu * model.row_bytes(t.table)
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

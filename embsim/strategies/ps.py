"""ps: sparse rows pushed to and pulled from parameter-server shards co-located on the
workers (BytePS / Parallax style); dense layers AllReduce.

Every table row lives on one of N server shards (rows hashed uniformly, so each shard
serves U/N of a worker's rows). After backward each worker pushes its U coalesced
(index, row) pairs (an alltoallv: 1/N to each shard); each server applies the union of
the rows it received (union/N rows); the worker then pulls its rows back (values only,
the server knows the indices from the push), and the next forward of the embedding
blocks on that pull. Volume per GPU ~ 2 x U x row bytes, independent of N; the servers'
NICs carry everything, which shows through the alltoallv on the topology.
"""

from __future__ import annotations

import numpy as np

from ..plan.names import bwd_name, fwd_name, update_name
from ..plan.ops import SyncTensor
from ..workload.memory import memory_per_gpu
from ..plan.traits import Payload
from .base import STRATEGIES, Strategy, StrategyPlan
from .common import dense_table_notes, replicated_sync, replicated_update_time, sparse_tables


def uniform_matrix(n: int, per_rank_bytes: float) -> np.ndarray:
    """Each rank sends per_rank_bytes spread evenly over the n shards (its own included)."""
    return np.full((n, n), per_rank_bytes / n)


@STRATEGIES.register("ps")
class ParameterServerStrategy(Strategy):
    description = "sparse rows pushed to / pulled from co-located PS shards (BytePS/Parallax)"
    embedding_payload = Payload.ROWS   # pushed gradient rows, pulled rows

    def plan(self, ctx):
        model, n = ctx.model, ctx.n_gpus
        sync = replicated_sync(ctx)
        update = replicated_update_time(ctx)
        sharded, cache = {}, {}
        for t in sparse_tables(ctx):
            push = t.unique_per_gpu * model.row_bytes(t.table)
            pull = t.unique_per_gpu * t.dim * model.dtype_bytes
            sync.append(SyncTensor(name=f"ps-push:{t.layer}", layer=t.layer, op="alltoall",
                                   nbytes=push, category="embedding", ready_after=bwd_name(t.layer),
                                   matrix=uniform_matrix(n, push)))
            sync.append(SyncTensor(name=f"ps-pull:{t.layer}", layer=t.layer, op="alltoall",
                                   nbytes=pull, category="embedding",
                                   ready_after=update_name(t.layer), needed_by=fwd_name(t.layer),
                                   matrix=uniform_matrix(n, pull).T.copy()))
            # each server shard applies the union of the rows pushed to it
            update[t.layer] = ctx.sparse_update(t.layer, t.unique_union / n)
            sharded[t.table] = n
            cache[f"ps worker cache ({t.table})"] = pull
        notes = dense_table_notes(ctx, "ps")
        return StrategyPlan(sync=tuple(sync), update_time=update,
                            memory=memory_per_gpu(model, embedding_shards=sharded, sparse_embedding_grads=True,
                                                  buffers=cache),
                            notes=tuple(notes))

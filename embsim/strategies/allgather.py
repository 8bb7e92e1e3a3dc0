"""allgather: sparse embedding gradients as (index, row) pairs AllGathered (Horovod's
sparse path, AGsparse). Every GPU receives every other GPU's rows, so the volume per GPU
grows with the GPU count: (N-1) x U x (D x dtype + 8) B.

`gather_rows=unique` (default): each GPU coalesces its duplicate lookups before sending
(U = distinct rows its batch touched), PyTorch's coalesce on its compute stream before the
gather (under framework tensorflow the distinct rows' bytes only: no TensorFlow system
merges before Horovod's allgather). `gather_rows=lookups`: stock Horovod, which sends one
pair per lookup: TensorFlow's gather gradient is an IndexedSlices with one row per looked-up
id, duplicates included, and Horovod's allreduce of an IndexedSlices is two allgathers, of its
values and of its indices, with no coalescing (horovod/tensorflow/__init__.py, `allreduce`:
"For IndexedSlices, do two allgathers instead of an allreduce"; sparse_as_dense=False is
hvd.DistributedOptimizer's default). Either way the optimizer then steps the union of the
gathered rows (Keras OptimizerV2 sums duplicate indices before a sparse apply). Tables whose
gradient is dense (a full softmax tied to them) are AllReduced densely, as DDP does.

`table_device=cpu` (default gpu): every sparse table lives in each worker process's host
memory, as TensorFlow 2.0-2.5's Keras Embedding places it when a GPU is present: the lookup
runs on the CPU and its rows are copied to the GPU, the gradient rows come back, Horovod
allgathers them as host tensors (MPI/Gloo through host memory) and the sparse optimizer
step runs on the CPU (strategies/host_tables.py has the mechanism, its sources and costs).
One node only; a single GPU still pays the host lookup, the copies and the CPU update.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import InputError
from ..plan.names import bwd_name, extra_name
from ..plan.ops import ComputeOp, SyncTensor
from ..workload.memory import memory_per_gpu
from ..plan.traits import Payload
from .base import STRATEGIES, Strategy, StrategyPlan
from .common import dense_table_notes, replicated_sync, replicated_update_time, sparse_tables
from .host_tables import TABLE_DEVICES, HostMemory, host_memory_note, host_table_plan, host_topology

GATHER_ROWS = ("unique", "lookups")   # coalesced rows | one per lookup (stock Horovod)


@dataclass(frozen=True)
class AllGatherOptions:
    gather_rows: str = "unique"
    table_device: str = "gpu"   # "cpu": tables in host memory (TF <= 2.5 Keras Embedding)

    def __post_init__(self):
        if self.gather_rows not in GATHER_ROWS:
            raise InputError(f"--option gather_rows={self.gather_rows!r}: expected one of "
                             f"{', '.join(GATHER_ROWS)}")
        if self.table_device not in TABLE_DEVICES:
            raise InputError(f"--option table_device={self.table_device!r}: expected one of "
                             f"{', '.join(TABLE_DEVICES)}")


@STRATEGIES.register("allgather")
class AllGatherStrategy(Strategy):
    description = "sparse (index, row) gradients AllGathered (Horovod sparse / AGsparse)"
    embedding_payload = Payload.ROWS   # gradient rows
    Options = AllGatherOptions

    host: HostMemory | None = None   # set by topology() with table_device=cpu

    def topology(self, topo):
        if self.options.table_device != "cpu":
            return topo
        out, self.host = host_topology(topo)
        return out

    def plan(self, ctx):
        if self.options.table_device == "cpu":
            return self._host_plan(ctx)
        model, n = ctx.model, ctx.n_gpus
        sync = replicated_sync(ctx)
        update = replicated_update_time(ctx)
        buffers, extra = {}, []
        for t in sparse_tables(ctx):
            rows = t.lookups_per_gpu if self.options.gather_rows == "lookups" else t.unique_per_gpu
            per_gpu = rows * model.row_bytes(t.table)
            sync.append(SyncTensor(name=f"allgather:{t.layer}", layer=t.layer, op="all_gather",
                                   nbytes=n * per_gpu, category="embedding",
                                   ready_after=bwd_name(t.layer)))
            if self.options.gather_rows == "unique" and n > 1 and model.framework == "pytorch":
                # the GPU coalesces its own repeated rows before it sends them (PyTorch's
                # coalesce), charged on its compute stream ahead of the gather. TensorFlow's
                # Horovod allgathers the IndexedSlices as they are (gather_rows=lookups): no
                # TF system merges first, so under TensorFlow `unique` is bytes only
                merge_s = ctx.sparse_merge(t.layer, t.lookups_per_gpu, t.unique_per_gpu)
                extra.append((bwd_name(t.layer), ComputeOp(extra_name("allgather-merge", t.layer), merge_s)))
            # every GPU applies the union of all GPUs' rows to its replica, having received
            # every GPU's rows (what TensorFlow's dedup sorts)
            update[t.layer] = ctx.sparse_update(t.layer, t.unique_union, received=n * rows)
            buffers[f"allgather receive buffer ({t.table})"] = n * per_gpu
        notes = dense_table_notes(ctx, "allgather")
        return StrategyPlan(sync=tuple(sync), update_time=update,
                            memory=memory_per_gpu(model, sparse_embedding_grads=True, buffers=buffers),
                            extra=tuple(extra), notes=tuple(notes))

    def _host_plan(self, ctx):
        """Every sparse table in host memory (host_tables.py): its lookup, copies, host
        allgather and CPU update as transfers and host-memory work; the rest as above."""
        model = ctx.model
        dense = [t.table for t in ctx.tables.values() if t.dense_grad]
        if dense:
            raise InputError(f"--option table_device=cpu: table {dense[0]} has a dense gradient (a full "
                             f"softmax tied to it); only sparse-gradient tables are modelled on the CPU")
        sync = replicated_sync(ctx)
        update = replicated_update_time(ctx)
        host_sync, host_notes, tables = [], [], sparse_tables(ctx)
        for t in tables:
            pieces, lines = host_table_plan(ctx, t, self.host, self.options.gather_rows)
            host_sync += pieces
            host_notes += lines
            update[t.layer] = 0.0     # the sparse apply runs on the CPU (the gradient's copy_after)
        host_notes.append(host_memory_note(model, [model.table(t.table) for t in tables], ctx.n_gpus))
        memory = memory_per_gpu(model, embedding_shards={t.table: 0 for t in tables},
                                sparse_embedding_grads=True)
        return StrategyPlan(sync=tuple(sync + host_sync), update_time=update, memory=memory,
                            notes=tuple(host_notes),
                            host_sync=tuple(host_sync), host_notes=tuple(host_notes))

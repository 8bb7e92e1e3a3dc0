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

The calls: a table's indices (int64) and rows (its dtype) go as two allgathers, as Horovod
sends an IndexedSlices (horovod/tensorflow/__init__.py `allreduce`: "do two allgathers";
torch's sparse path likewise), and Horovod's tensor fusion joins the allgathers that are
ready together into one call per dtype, up to HOROVOD_FUSION_THRESHOLD (64 MiB of output;
common/controller.cc FuseResponses, since 0.18): tables whose lookups run side by side
(a recommender's 26-1000, NCF's four: their backwards end within one 1 ms Horovod cycle)
share one index and one row call a step, each table its own where more backward runs
between them (a translation model's source and target vocabularies). With `gather_rows=unique` under PyTorch the GPUs' coalesced row
counts differ and torch's all_gather needs equal sizes, so a third call carries the counts
first (calibrate's strategies.py does exactly this). Each call pays its own fixed costs.

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
from ..workload.host_memory import capacity_bytes
from ..workload.memory import memory_per_gpu
from ..workload.model import INDEX_BYTES
from ..plan.traits import Payload
from .base import STRATEGIES, Strategy, StrategyPlan
from .common import dense_table_notes, replicated_sync, replicated_update_time, sparse_tables
from .host_tables import (TABLE_DEVICES, HostMemory, host_memory_need, host_memory_note, host_table_plan,
                          host_topology)

GATHER_ROWS = ("unique", "lookups")   # coalesced rows | one per lookup (stock Horovod)


HOROVOD_FUSION_BYTES = 64 << 20     # HOROVOD_FUSION_THRESHOLD's default (docs/tensor-fusion.rst)
HOROVOD_CYCLE_S = 1e-3              # HOROVOD_CYCLE_TIME's default, 1 ms (common/operations.cc)


def fused_groups(model, tables, n: int, layer_bwd: dict, rows_sent: dict) -> list[list]:
    """The sparse tables in backward order, in groups whose gradients are ready within one
    Horovod cycle of the group's first (the backward between them, `layer_bwd` seconds per
    layer, under HOROVOD_CYCLE_S), each group cut where its row call (`rows_sent` per GPU
    by layer) would pass HOROVOD_FUSION_BYTES of output."""
    position = {l.name: i for i, l in enumerate(model.layers)}

    def backward_between(i: int, first: int) -> float:
        """Seconds from the end of layer `first`'s backward to the end of layer i's."""
        return sum(layer_bwd.get(l.name, 0.0) for l in model.layers[i:first])

    groups: list[list] = []
    first = None
    for t in sorted(tables, key=lambda t: -position[t.layer]):
        i = position[t.layer]
        if first is None or backward_between(i, first) > HOROVOD_CYCLE_S:
            groups.append([])
            first = i
        groups[-1].append(t)
    cut = []
    for group in groups:
        part, size = [], 0.0
        for t in group:
            rows = n * rows_sent[t.layer] * (model.row_bytes(t.table) - INDEX_BYTES)
            if part and size + rows > HOROVOD_FUSION_BYTES:
                cut.append(part)
                part, size = [], 0.0
            part.append(t)
            size += rows
        cut.append(part)
    return cut


def group_calls(group: list, rows_sent: dict, model, n: int, counts_first: bool) -> list[SyncTensor]:
    """One fused group's all_gathers (nccl-tests bytes), ready when its last table's
    backward ends; the group's row call feeds every one of its tables' updates, carried
    by that last table's update (the others' updates wait on it through the same op)."""
    carrier = group[-1].layer
    indices = n * sum(rows_sent[t.layer] for t in group) * INDEX_BYTES
    values = n * sum(rows_sent[t.layer] * (model.row_bytes(t.table) - INDEX_BYTES) for t in group)
    calls = ([("allgather-count", n * INDEX_BYTES * len(group))] if counts_first else []) + \
        [("allgather-index", indices), ("allgather", values)]
    return [SyncTensor(name=f"{name}:{carrier}", layer=carrier, op="all_gather", nbytes=nbytes,
                       category="embedding", ready_after=bwd_name(carrier)) for name, nbytes in calls]


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
    host_bytes: float | None = None  # and the node's host memory (None: not given)

    def rows_sent(self, t) -> float:
        return t.lookups_per_gpu if self.options.gather_rows == "lookups" else t.unique_per_gpu

    def counts_first(self, model) -> bool:
        """Coalesced rows differ in number per GPU, and torch's all_gather needs equal
        sizes: under PyTorch the counts go first (Horovod negotiates sizes itself)."""
        return self.options.gather_rows == "unique" and model.framework == "pytorch"

    def topology(self, topo):
        if self.options.table_device != "cpu":
            return topo
        out, self.host = host_topology(topo)
        self.host_bytes = capacity_bytes(topo.node.host_memory_gb)
        return out

    def plan(self, ctx):
        if self.options.table_device == "cpu":
            return self._host_plan(ctx)
        model, n = ctx.model, ctx.n_gpus
        sync = replicated_sync(ctx)
        update = replicated_update_time(ctx)
        buffers, extra = {}, []
        tables = sparse_tables(ctx)
        sent = {t.layer: self.rows_sent(t) for t in tables}
        merge = self.options.gather_rows == "unique" and n > 1 and model.framework == "pytorch"
        for group in fused_groups(model, tables, n, ctx.layer_bwd, sent):
            sync += group_calls(group, sent, model, n, self.counts_first(model))
            # every GPU applies the union of all GPUs' rows to its replica, having received
            # every GPU's rows (what TensorFlow's dedup sorts), once the group's calls are
            # in: its tables' updates ride on the op those calls feed (the carrier's)
            carrier = group[-1].layer
            update[carrier] = 0.0
            for t in group:
                rows = sent[t.layer]
                if merge:
                    # the GPU coalesces its own repeated rows before it sends them (PyTorch's
                    # coalesce), charged on its compute stream ahead of the gather. TensorFlow's
                    # Horovod allgathers the IndexedSlices as they are (gather_rows=lookups): no
                    # TF system merges first, so under TensorFlow `unique` is bytes only
                    merge_s = ctx.sparse_merge(t.layer, t.lookups_per_gpu, t.unique_per_gpu)
                    extra.append((bwd_name(t.layer), ComputeOp(extra_name("allgather-merge", t.layer), merge_s)))
                update.setdefault(t.layer, 0.0)
                update[carrier] += ctx.sparse_update(t.layer, t.unique_union, received=n * rows)
                buffers[f"allgather receive buffer ({t.table})"] = n * rows * model.row_bytes(t.table)
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
        held = [model.table(t.table) for t in tables]
        need = host_memory_need(model, held, ctx.n_gpus, self.host_bytes)
        host_notes.append(host_memory_note(model, held, ctx.n_gpus, need))
        memory = memory_per_gpu(model, embedding_shards={t.table: 0 for t in tables},
                                sparse_embedding_grads=True, host=need)
        return StrategyPlan(sync=tuple(sync + host_sync), update_time=update, memory=memory,
                            notes=tuple(host_notes),
                            host_sync=tuple(host_sync), host_notes=tuple(host_notes))

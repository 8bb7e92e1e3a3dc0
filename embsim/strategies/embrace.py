"""embrace: EmbRace's sparsity-aware hybrid communication (ICPP'22, arXiv 2110.09132).

Each sparse table is sharded across the N GPUs (model parallel); dense layers stay data
parallel and AllReduce. Per step and table:
  1. index exchange: all_gather of every GPU's token ids (lookups x 8 B per GPU), which the
     shard's lookup blocks on (none with `--option input=model`: each GPU's input pipeline
     yields the ids of its shards for the global batch);
  2. forward AlltoAll of the looked-up vectors (per GPU lookups x D x dtype B; one vector
     per sample for a pooled layer, whose owner sums the bag: Model.vectors_out), which the
     next layer blocks on;
  3. backward AlltoAll of their gradients, which the embedding's backward (the shard's
     scatter into its rows) blocks on; then each shard updates the rows it owns.
The volume depends on the batch and D, never on the vocabulary. NCCL's AlltoAll goes over
NVLink inside a node and through the rails across nodes (PXN); the collective model
routes it.

Sharding (`--option shard=cols|rows`):
- cols (default): every GPU holds D/N columns of every row; lookups and bytes spread
  evenly however skewed the tokens are.
- rows: contiguous blocks of rows (row ids in frequency order, as with a vocabulary sorted
  by count). Under Zipf the block holding the hottest rows serves most lookups: the
  AlltoAll becomes an alltoallv with per-shard shares from the token distribution, and
  the hottest shard's extra lookup / scatter / update work holds every GPU back.
- hashed: every row hashed to a GPU (a few hot rows still make the load lumpy).
- tables: whole tables on GPUs by DeepLearningExamples' greedy placement, one fused
  alltoallv per direction for all tables, as hybrid-parallel DLRM trainers run it
  (embrace_tables.py).

The exchange (`--option exchange=per_table|fused`, cols, rows and hashed): per_table (default)
runs one AlltoAll per table and direction, as EmbRace's prototype on Horovod does: Horovod
fuses allreduce, adasum, reducescatter and allgather responses into its fusion buffer, never
alltoall (horovod/common/controller.cc Controller::FuseResponses @2fa9fc12). fused runs the
split through the table-wise plan (every table cut into N pieces, one per GPU: column shares,
or row blocks / hashed rows serving their rows' share of the lookups): one alltoallv of ids
(each GPU sends each owner the ids it owns) and one of vectors per direction for all tables,
as TorchRec's column-wise sharding and HugeCTR's Sparse Operation Kit (one fused table, rows
hashed by key % GPUs) exchange them. For a model of many small tables the per-table exchange
is latency-bound (one collective's fixed cost per table), so this option can change a
strategy ranking. shard=tables always runs one fused alltoallv per direction: it takes no
`exchange` (either value is refused, per_table since it cannot run, fused since it would
look like a choice), and every output reports exchange=fused for it, implied by shard=tables
(EmbRaceOptions.implied), not a default that did not run.
Tables with a dense gradient (a full softmax tied to them) stay replicated and AllReduce.
A sampled softmax's own table (softmax_w: an output layer's `table:`, or a tied one under
--untie-outputs) is read by that layer alone: the shards gather the rows of its candidates
and true classes (ids known before the forward) from the model's first layer on, the
AlltoAll delivers them before the softmax's forward, and their gradients go back to the
shards after its backward, for the shards' update.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..collectives.traffic import Traffic
from ..plan.names import bwd_name, extra_name, fwd_name
from ..plan.ops import ComputeOp, SyncTensor
from ..errors import InputError, ModelNotSupported
from ..options import positive_number, switch
from ..workload.memory import memory_per_gpu
from ..workload.model import INDEX_BYTES
from ..workload.compute import unique_ids_kernels
from ..workload.embedding_kernels import embedding_kernels
from ..plan.traits import Payload
from .base import STRATEGIES, Strategy, StrategyPlan
from .common import (ID_STAGING_S, column_split_note, dedup_expansion_seconds, dense_table_notes, replicated_sync,
                     replicated_update_time, sent_shares, sparse_tables)
from .embrace_tables import plan_table_wise
from .row_split import row_split



SHARDS = ("cols", "rows", "hashed", "tables")


def check_pooled(model, tables: list[str], options) -> None:
    """A bag lookup's owner sends one summed vector per sample: only when it holds every
    row of the bag (shard=tables) or a slice of every row's columns (cols). Under rows or
    hashed each shard would send partial sums to be reduced (a reduce-scatter), and dedup
    sends distinct rows where a bag sends sums: neither is modelled."""
    for table in tables:
        for user in model.sparse_users(table):
            if not user.pooled:
                continue
            if options.shard in ("rows", "hashed"):
                raise ModelNotSupported(f"--strategy embrace --option shard={options.shard}: layer {user.name} "
                                        f"pools its lookups (pooling:), so each row shard would send partial "
                                        f"sums to be reduced, which is not modelled; use shard=cols or shard=tables")
            if options.dedup:
                raise ModelNotSupported(f"--strategy embrace --option dedup=on: layer {user.name} pools its "
                                        f"lookups (pooling:), so the AlltoAll carries one summed vector per "
                                        f"sample, not rows to de-duplicate; drop dedup")


def lookup_seconds(ctx, t, lookups: float) -> tuple[float, float]:
    """(forward, backward) seconds per row read of the table's owner lookup: the owning
    embedding layer's times per lookup, or, where the owner is an output layer on its own
    table (its time is the softmax's GEMMs), a gather of the rows and its sparse
    gradient's index copy (embedding_kernels)."""
    if ctx.model.layer(t.layer).kind == "embedding" or ctx.kernel_seconds is None:
        return ctx.layer_fwd[t.layer] / lookups, ctx.layer_bwd[t.layer] / lookups
    fwd, _, sparse = embedding_kernels(f"{t.layer}.rows", max(1, round(lookups)), t.dim, t.vocab,
                                       ctx.model.table_bytes, framework=ctx.model.framework)
    return ctx.kernel_seconds(fwd) / lookups, ctx.kernel_seconds(sparse) / lookups


def wire_notes(model, options) -> tuple[str, ...]:
    """A cast that casts nothing is said: otherwise alltoall_dtype=compute under a compute
    dtype as wide as the tables' would look like an option that took effect."""
    if options.alltoall_dtype == "compute" and model.dtype_bytes == model.table_bytes:
        return (f"embrace: alltoall_dtype=compute changes nothing: the compute dtype ({model.dtype}) "
                f"has the tables' {model.table_bytes}-byte elements, so the rows go on the wire as they are",)
    return ()


@dataclass(frozen=True)
class EmbRaceOptions:
    # cols: D/N columns of every row per GPU; rows: contiguous row blocks (the hottest
    # rows on one GPU); hashed: every row hashed to a GPU; tables: whole tables per GPU
    # (DLE's greedy placement), one fused alltoallv per direction
    shard: str = "cols"
    # each GPU sends each distinct row it reads once (torch.unique before the AlltoAll)
    # instead of one vector per lookup; off as in EmbRace's description
    dedup: bool = False
    # shard=tables only: the dense layers before the lookups data parallel (data), or on GPU 0
    # over the global batch as DeepLearningExamples' DLRM runs them by default (model)
    bottom_mlp: str = "data"
    # the looked-up rows on the wire: in the table's precision (FP32 under autocast), or in
    # the compute dtype (a trainer that casts them before the exchange, as DeepLearningExamples'
    # PyTorch DLRM does under --amp: DlrmBottom casts, then the all-to-all)
    alltoall_dtype: str = "table"
    # where a step's ids come from: data (each GPU reads its own batch's ids, which the
    # tables' owners need: the id exchange above) or model (each GPU's input pipeline
    # already yields the ids its shards serve, for the global batch: no exchange, as NVIDIA
    # Merlin distributed-embeddings' dp_input=False)
    input: str = "data"
    # shard=tables only: how whole tables land on GPUs: greedy (DeepLearningExamples' capped
    # size greedy) or memory_balanced (Merlin distributed-embeddings: tables above
    # column_slice_threshold elements cut along their width first, then dealt in a snake)
    placement: str = "greedy"
    column_slice_threshold: float | None = None
    # cols, rows, hashed: one AlltoAll per table and direction (per_table: EmbRace on Horovod,
    # which never fuses alltoalls) or one for all tables (fused: TorchRec, HugeCTR's SOK).
    # Not given (None): per_table, and under shard=tables, which always fuses, fused
    exchange: str | None = None

    def wire_bytes(self, model) -> int:
        return model.table_bytes if self.alltoall_dtype == "table" else model.dtype_bytes

    def __post_init__(self):
        if self.alltoall_dtype not in ("table", "compute"):
            raise InputError(f"--option alltoall_dtype={self.alltoall_dtype!r}: expected table or compute")
        if self.shard not in SHARDS:
            raise InputError(f"--option shard={self.shard!r}: expected one of {', '.join(SHARDS)}")
        if self.placement not in ("greedy", "memory_balanced"):
            raise InputError(f"--option placement={self.placement!r}: expected greedy or memory_balanced")
        if (self.placement != "greedy" or self.column_slice_threshold is not None) and self.shard != "tables":
            raise InputError("--option placement / column_slice_threshold: only with shard=tables")
        if self.column_slice_threshold is not None:
            if self.placement != "memory_balanced":
                raise InputError("--option column_slice_threshold: only with placement=memory_balanced "
                                 "(DeepLearningExamples' greedy places tables whole)")
            positive_number(self.column_slice_threshold, "column_slice_threshold", 1)
        if self.exchange is not None:
            if self.exchange not in ("per_table", "fused"):
                raise InputError(f"--option exchange={self.exchange!r}: expected per_table or fused")
            if self.shard == "tables":
                # either value: per_table cannot run, and fused is no choice there
                raise InputError(f"--option exchange={self.exchange}: only with shard=cols, rows or "
                                 f"hashed; shard=tables always fuses its exchange (one alltoallv per "
                                 f"direction for all tables): leave exchange out")
        object.__setattr__(self, "exchange", self.exchange or ("fused" if self.shard == "tables" else "per_table"))
        if self.input not in ("data", "model"):
            raise InputError(f"--option input={self.input!r}: expected data or model")
        if self.bottom_mlp not in ("data", "model"):
            raise InputError(f"--option bottom_mlp={self.bottom_mlp!r}: expected data or model")
        if self.bottom_mlp != "data" and self.shard != "tables":
            raise InputError("--option bottom_mlp: only with shard=tables")
        object.__setattr__(self, "dedup", switch(self.dedup, "dedup"))

    def implied(self) -> dict[str, str]:
        """Options whose value another option decides, when not given, with why: what the
        options line reports instead of "(default)" (engine.options_used)."""
        return {"exchange": "shard=tables always fuses"} if self.shard == "tables" else {}


@STRATEGIES.register("embrace")
class EmbRaceStrategy(Strategy):
    description = "EmbRace: tables sharded, AlltoAll of lookups fwd / gradients bwd, dense AllReduce"
    embedding_payload = Payload.TOKENS   # per-token vectors and gradients

    Options = EmbRaceOptions

    @property
    def per_table_embedding_traffic(self) -> bool:
        """Not under shard=tables or exchange=fused, where one alltoallv carries every table."""
        return self.options.shard != "tables" and self.options.exchange != "fused"

    def plan(self, ctx):
        check_pooled(ctx.model, [t.table for t in sparse_tables(ctx)], self.options)
        plan = self._per_table_plan(ctx) if self.per_table_embedding_traffic else plan_table_wise(ctx, self.options)
        return replace(plan, notes=plan.notes + wire_notes(ctx.model, self.options))

    def _per_table_plan(self, ctx):
        model, n = ctx.model, ctx.n_gpus
        layers = [l.name for l in model.layers]
        sync = replicated_sync(ctx)
        update = replicated_update_time(ctx)
        extra, sharded, buffers, scale = [], {}, {}, {}
        wire = self.options.wire_bytes(model)
        notes = dense_table_notes(ctx, "embrace")
        for t in sparse_tables(ctx):
            users = model.sparse_users(t.table)
            lookups = {l.name: model.rows_read(l) for l in users}
            total = sum(lookups.values())
            vec = t.dim * wire
            # with dedup a GPU sends each distinct id and row once (a pooled table every row)
            ids_sent, rows_sent = sent_shares(t, users, total, self.options.dedup)
            split = (row_split(t, self.options.shard, self.options.dedup, n, total)
                     if self.options.shard in ("rows", "hashed") and n > 1 else None)
            if split is not None:
                shares, rows = split
                hot = float(shares.max() * n)          # hottest shard's work / an even share
                shard_rows = float(rows.max())
            else:
                shares, hot, shard_rows = None, 1.0, t.unique_union / n

            # the owner's lookup kernel, per row read: what a shard pays per lookup served;
            # with dedup an owner serves each sender's distinct rows only
            fwd_per_lookup, bwd_per_lookup = (rows_sent * s for s in lookup_seconds(ctx, t, lookups[t.layer]))
            # the op the shards' lookup goes with: the owning lookup's forward, or for an
            # output layer's own table (its ids, true classes and candidates, known before
            # the forward) the model's first layer's
            lookup = fwd_name(t.layer if model.layer(t.layer).kind == "embedding" else layers[0])
            if rows_sent < 1.0:
                scale.update({u.name: (rows_sent, rows_sent) for u in users if u.kind == "embedding"})
            if self.options.dedup:
                # the framework's unique over the batch's ids (torch.unique with its inverse:
                # a 64-bit radix sort, scans and a host sync), before the ids leave
                parts = unique_ids_kernels(f"embrace-dedup.{t.layer}", total, t.unique_per_gpu, model)
                dedup_s = ctx.synced_seconds(parts)
                extra.append((lookup, ComputeOp(extra_name("embrace-dedup", t.layer), dedup_s)))
            if self.options.input == "data":
                ids = extra_name("embrace-ids", t.layer)
                extra.append((lookup, ComputeOp(ids, ID_STAGING_S)))
                sync.append(SyncTensor(name=f"embrace-ids:{t.table}", layer=t.layer, op="all_gather",
                                       nbytes=n * total * ids_sent * INDEX_BYTES, category="embedding",
                                       ready_after=ids, needed_by=lookup))
            for user in users:
                # the looked-up vectors: one per lookup, or one per sample from a bag
                nbytes = model.vectors_out(user) * vec * rows_sent
                i = layers.index(user.name)
                if user.kind == "embedding":
                    produced, consumer = fwd_name(user.name), fwd_name(layers[i + 1])
                    grad_ready, grad_consumer = bwd_name(layers[i + 1]), bwd_name(user.name)
                elif user.name == t.layer:
                    # the layer's own table (a sampled softmax's softmax_w): the shards gather
                    # the rows of its candidates and true classes with the model's first
                    # layer; the gradient rows go back to the shards after its backward, for
                    # their update (needed_by None)
                    produced, consumer = lookup, fwd_name(user.name)
                    grad_ready, grad_consumer = bwd_name(user.name), None
                else:   # e.g. a sampled softmax tied to the table: rows fetched with the lookups
                    produced, consumer = fwd_name(t.layer), fwd_name(user.name)
                    grad_ready, grad_consumer = bwd_name(user.name), bwd_name(t.layer)
                if hot > 1.0:
                    # every GPU waits for the hottest shard's lookups before the AlltoAll
                    after = layers[layers.index(produced.layer) + 1]
                    excess = ComputeOp(extra_name("embrace-hot-shard", user.name),
                                       fwd_per_lookup * lookups[user.name] * (hot - 1.0))
                    extra.append((fwd_name(after), excess))
                    produced = excess.id
                if rows_sent < 1.0 and user.kind == "embedding":
                    # the distinct rows back to one per lookup, and the lookups' gradients
                    # summed into them before they leave
                    fwd_s, bwd_s = dedup_expansion_seconds(ctx, user.name, lookups[user.name],
                                                           rows_sent * lookups[user.name], t.dim, wire)
                    expand = ComputeOp(extra_name("embrace-expand", user.name), fwd_s)
                    merge = ComputeOp(extra_name("embrace-merge", user.name), bwd_s)
                    extra += [(consumer, expand), (grad_consumer, merge)]
                    consumer, grad_ready = expand.id, merge.id
                fwd_matrix = bwd_matrix = None
                if shares is not None:
                    # shard j sends rank i the vectors of rank i's lookups that j owns
                    fwd_matrix = Traffic.from_senders(shares * nbytes)
                    bwd_matrix = fwd_matrix.T
                sync.append(SyncTensor(name=f"embrace-fwd:{user.name}", layer=user.name, op="alltoall",
                                       nbytes=nbytes, category="embedding", ready_after=produced,
                                       needed_by=consumer, matrix=fwd_matrix))
                sync.append(SyncTensor(name=f"embrace-bwd:{user.name}", layer=user.name, op="alltoall",
                                       nbytes=nbytes, category="embedding", ready_after=grad_ready,
                                       needed_by=grad_consumer, matrix=bwd_matrix))
            # the shard updates its rows (cols: union x D/N elements); with rows the hottest
            # shard also scatters more gradients than an even share
            # (a shard receives every GPU's gradient for its D/N columns: total x hot
            # lookup-rows of work, what an uncoalesced plain-SGD step updates)
            if self.options.shard == "cols":
                # the merge before the update (PyTorch's coalesce, TensorFlow's dedup) runs
                # over every id the owner receives (all N batches'), whatever its share of
                # the columns
                own = ctx.sparse_update(t.layer, t.unique_union, n * total * rows_sent, columns=1.0 / n)
            else:
                own = ctx.sparse_update(t.layer, shard_rows, total * rows_sent * hot)
            update[t.layer] = own + bwd_per_lookup * total * (hot - 1.0)
            sharded[t.table] = n
            buffers[f"embrace alltoall buffers ({t.table})"] = 2 * sum(map(model.vectors_out, users)) * vec
            if shares is not None:
                notes.append(f"embrace shard={self.options.shard} {t.table}: hottest shard serves "
                             f"{shares.max() * 100:.1f} % of lookups ({hot:.1f}x an even share)")
            if self.options.dedup:
                notes.append(f"embrace dedup {t.table}: {t.unique_per_gpu:,.0f} distinct of {total:,.0f} rows "
                             f"read per GPU sent ({rows_sent * 100:.0f} % of the bytes)")
        if self.options.shard == "cols":
            notes += filter(None, [column_split_note(sparse_tables(ctx), n)])
        if len(sharded) > 1 and self.options.shard == "cols" and n > 1:
            notes.append(f"embrace exchange=per_table: {len(sharded)} tables, one AlltoAll each per direction "
                         f"(EmbRace on Horovod, which never fuses alltoalls); --option exchange=fused runs "
                         f"one for all tables")
        return StrategyPlan(sync=tuple(sync), update_time=update,
                            memory=memory_per_gpu(model, embedding_shards=sharded, sparse_embedding_grads=True,
                                                  buffers=buffers),
                            extra=tuple(extra), notes=tuple(notes), layer_time_scale=scale)

"""embrace --option shard=tables: whole tables on GPUs, one fused alltoallv per direction,
as hybrid-parallel DLRM trainers run it (DeepLearningExamples' PyTorch DLRM, Merlin
Distributed Embeddings in its TensorFlow2 DLRM). `exchange=fused` takes the same plan with
every table cut into N pieces, one per GPU: `shard=cols` N equal column shares; `shard=hashed`
(rows) every row on GPU hash(row) (contiguous row blocks), each piece serving the share of
the lookups that its rows draw, as HugeCTR's Sparse Operation Kit exchanges one fused table
(All2AllDenseEmbedding: key % GPUs, one all2all of keys and one of vectors a direction).
A row-split exchange moves a different number of ids to each owner every step, so it also
pays what SOK's dispatchers do for that: an alltoall of the per-owner counts and the host's
read-back of them before the ids leave, and a reorder of the exchanged rows (into batch
order after the forward exchange, into owner order before the backward one).

Per step, for all sparse tables at once:
  1. ids: every GPU sends each table's ids of its batch to the table's owner (an
     alltoallv: rank i -> owner g carries the ids of g's tables);
  2. each owner looks up its tables for the whole global batch (n x one batch's lookups);
  3. forward: one alltoallv of the looked-up vectors, owner g -> rank i the rows of i's
     samples from g's tables (one summed vector per sample from a pooled layer), which the
     layer after the lookups blocks on;
  4. backward: the transpose, which the lookups' backward blocks on; each owner then
     scatters n batches' gradients into its tables and updates the rows they touched.
The placement is DLE's greedy (table_placement). Its imbalance is the cost: every GPU
waits for the busiest owner's lookups, scatters and updates, and the busiest sender's
share of the alltoallv sets its pace (the network model routes the uneven matrix).

`bottom_mlp=model` is DLE's default device mapping (dlrm/utils/distributed.py
get_device_mapping, data_parallel_bottom_mlp off): the dense layers before the lookups run
on GPU 0 alone over the whole global batch, their output travels in the alltoallv as one
more vector per sample (of the tables' width: DLRM's dot interaction needs it), their
gradient is not all-reduced, and on more than 4 GPUs GPU 0 holds no table (the tables go
to the other n - 1). `bottom_mlp=data` (default) keeps them data parallel.
A piece is (table, GPU, the share of the table's lookups it serves, the share of each row's
columns it holds, the share of the table's parameters it holds): a whole table (1, 1, 1), a
column share (1, 1/N, 1/N), a row piece (its rows' share of the lookups, 1, 1/N).
Not modelled: a trainer's own kernel fusion across tables (DLE's joint embedding kernel)
beyond what the kernel model charges per lookup layer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..collectives.traffic import Traffic
from ..errors import InputError
from ..plan.names import bwd_name, extra_name, fwd_name
from ..plan.ops import ComputeOp, SyncTensor
from ..workload.compute import unique_ids_kernels
from ..workload.kernels import Kernel
from ..workload.memory import memory_per_gpu
from ..workload.model import INDEX_BYTES
from .base import StrategyPlan
from .common import (ID_STAGING_S, column_split_note, dedup_expansion_seconds, dense_table_notes, replicated_sync,
                     replicated_update_time, sent_shares, sparse_tables)
from .row_split import row_split
from .table_placement import column_slices, memory_balanced, owners

COUNT_BYTES = 4      # one uint32 id count per peer (SOK's All2AllInput count exchange)


def plan_table_wise(ctx, options) -> StrategyPlan:
    """The plan under `options` (embrace.EmbRaceOptions, already checked: dedup,
    bottom_mlp, the exchanged rows' bytes)."""
    model, n = ctx.model, ctx.n_gpus
    dedup, bottom_mlp, wire = options.dedup, options.bottom_mlp, options.wire_bytes(model)
    fused = options.shard != "tables"        # cols, rows or hashed with exchange=fused
    flag = f"shard={options.shard} exchange=fused" if fused else "shard=tables"
    layers = [l.name for l in model.layers]
    sync, update = replicated_sync(ctx), replicated_update_time(ctx)
    notes = dense_table_notes(ctx, "embrace")
    tables = sparse_tables(ctx)
    if not tables:
        return StrategyPlan(sync=tuple(sync), update_time=update,
                            memory=memory_per_gpu(model), notes=tuple(notes))
    lookup_layers, per_table, vectors, id_share = [], [], [], []
    for t in tables:
        users = model.sparse_users(t.table)
        for u in users:
            if u.kind != "embedding":
                also = "also " if any(x.kind == "embedding" for x in users) else ""
                raise InputError(f"--option {flag}: table {t.table} is {also}read by layer "
                                 f"{u.name} ({u.kind}), which one fused exchange after the lookups "
                                 f"cannot serve; use " + ("exchange=per_table" if fused
                                                          else "shard=cols, rows or hashed"))
        lookup_layers += [u.name for u in users]
        total = float(sum(model.rows_read(u) for u in users))
        # with dedup each GPU sends each distinct id and row once (a pooled table every row)
        ids_sent, rows_sent = sent_shares(t, users, total, dedup)
        per_table.append((t, users, total, rows_sent))
        id_share.append(ids_sent)
        vectors.append(float(sum(model.vectors_out(u) for u in users)))   # one per sample if pooled
    first = min(lookup_layers, key=layers.index)
    last = max(lookup_layers, key=layers.index)
    if layers.index(last) + 1 >= len(layers):
        raise InputError(f"--option {flag}: the model ends with a lookup; nothing reads the vectors")
    consumer = layers[layers.index(last) + 1]

    # per GPU: the lookups it serves (n batches of its tables) against an even share
    fwd_load, bwd_load, upd_load = np.zeros(n), np.zeros(n), np.zeros(n)
    ids_to, vectors_from = np.zeros(n), np.zeros(n)
    extra = []
    base_fwd = base_bwd = 0.0
    sizes = [float(t.vocab * t.dim) for t, *_ in per_table]
    if bottom_mlp == "model":
        bottom = [l for l in model.layers[:layers.index(first)] if l.kind != "embedding"]
        if not bottom:
            raise InputError("--option bottom_mlp=model: the model has no dense layers before its lookups")
        names = {l.name for l in bottom}
        sync = [s for s in sync if s.layer not in names]      # model parallel: nothing to all-reduce
        fwd = sum(ctx.layer_fwd[l.name] for l in bottom)
        bwd = sum(ctx.layer_bwd[l.name] for l in bottom)
        base_fwd, base_bwd = fwd, bwd
        fwd_load[0], bwd_load[0] = n * fwd, n * bwd
        width = max(t.dim for t, *_ in per_table)
        vectors_from[0] += model.batch * width * model.dtype_bytes
        # GPU 0 holds no table on more than 4 GPUs (DLE: "leave one device out for the bottom MLP")
        owner = [g + 1 for g in owners(sizes, n - 1)] if n > 4 else owners(sizes, n)
        pieces = [Piece(i, g) for i, g in enumerate(owner)]
    elif options.shard == "cols":
        pieces = [Piece(i, g, columns=1.0 / n, params=1.0 / n) for i in range(len(per_table)) for g in range(n)]
        notes += filter(None, [column_split_note(tables, n)])
    elif fused:
        pieces = row_pieces(per_table, options.shard, dedup, n)
    else:
        pieces = placed_pieces(per_table, sizes, options, n)
    # each table's own lookup times (one batch) and full update, once; pieces take shares.
    # With dedup an owner looks up and scatters each sender's distinct rows only (`rows_sent`)
    table_fwd = [rows_sent * sum(ctx.layer_fwd[u.name] for u in users) for _, users, _, rows_sent in per_table]
    table_bwd = [rows_sent * sum(ctx.layer_bwd[u.name] for u in users) for _, users, _, rows_sent in per_table]
    scale = {u.name: (rows_sent, rows_sent) for _, users, _, rows_sent in per_table for u in users
             if rows_sent < 1.0}
    base_fwd, base_bwd = base_fwd + sum(table_fwd), base_bwd + sum(table_bwd)
    piece_update = {}
    for p in pieces:
        # a column slice serves every lookup of its table on its share of the columns; a row
        # piece serves its rows' share of the lookups on whole rows
        t, _, total, rows_sent = per_table[p.table]
        key = (p.table, p.lookups, p.columns, p.rows)
        if key not in piece_update:
            rows = t.unique_union if p.rows is None else p.rows
            piece_update[key] = ctx.sparse_update(t.layer, rows, n * total * rows_sent * p.lookups, columns=p.columns)
        work = n * p.lookups * p.columns
        fwd_load[p.gpu] += work * table_fwd[p.table]
        bwd_load[p.gpu] += work * table_bwd[p.table]
        upd_load[p.gpu] += piece_update[key]
        ids_to[p.gpu] += total * id_share[p.table] * p.lookups * INDEX_BYTES
        vectors_from[p.gpu] += vectors[p.table] * rows_sent * p.lookups * p.columns * t.dim * wire

    if dedup:
        # one unique over every id of the batch (all tables' ids, offset into one key space
        # as SOK's compress does), before the ids leave
        lookups = sum(total for _, _, total, _ in per_table)
        distinct = sum(t.unique_per_gpu for t, *_ in per_table)
        dedup_s = ctx.synced_seconds(unique_ids_kernels("embrace-dedup", lookups, distinct, model))
        extra.append((fwd_name(first), ComputeOp(extra_name("embrace-dedup", first), dedup_s)))
    rows_split = options.shard in ("rows", "hashed")
    if options.input == "data":
        ids = extra_name("embrace-ids", first)
        extra.append((fwd_name(first), ComputeOp(ids, ID_STAGING_S)))
        ids_ready = ids
        if rows_split and n > 1:
            # how many ids go to each owner changes every step: the GPUs swap their counts
            # first and the host reads them back to size the alltoallv (SOK's All2AllInput:
            # ncclSend/Recv of one count per peer, cudaMemcpy to the host, stream sync)
            counts = extra_name("embrace-id-counts", first)
            extra.append((fwd_name(first), ComputeOp(counts, ID_STAGING_S)))
            sync.append(SyncTensor(name="embrace-id-counts:tables", layer=first, op="alltoall",
                                   nbytes=float(n * COUNT_BYTES), category="embedding", ready_after=ids,
                                   needed_by=counts, matrix=Traffic.even(n, n * COUNT_BYTES)))
            ids_ready = counts
        sync.append(SyncTensor(name="embrace-ids:tables", layer=first, op="alltoall",
                               nbytes=float(ids_to.sum()), category="embedding", ready_after=ids_ready,
                               needed_by=fwd_name(first), matrix=Traffic(np.ones(n), ids_to)))

    produced = fwd_name(last)
    if fwd_load.max() > base_fwd:
        # every GPU waits for the busiest owner's lookups before the alltoallv
        excess = ComputeOp(extra_name("embrace-busiest-owner", last), float(fwd_load.max() - base_fwd))
        extra.append((fwd_name(consumer), excess))
        produced = excess.id
    width = max(t.dim for t, *_ in per_table)
    before_fwd, before_bwd = [], []          # in stream order, after / before the alltoallv
    if rows_split and n > 1:
        # rows come back grouped by owner: put them in the batch's order, and in backward
        # gather the gradients into the owners' order before they leave (SOK's All2AllOutput
        # reorderKernel / gatherExKernel over every row it exchanges)
        sent_rows = float(sum(total * rows_sent for _, _, total, rows_sent in per_table))
        move = ctx.kernel_seconds([Kernel("gather", rows=sent_rows, row_bytes=width * wire, ops=0,
                                          name="embrace-reorder")])
        before_fwd.append(ComputeOp(extra_name("embrace-reorder", last), move))
        before_bwd.append(ComputeOp(extra_name("embrace-reorder-bwd", last), move))
    expanded = [(total, total * rows_sent) for _, _, total, rows_sent in per_table if rows_sent < 1.0]
    if expanded:
        # the distinct rows back to one per lookup, and the lookups' gradients summed into
        # them before they leave (every table's as one, as SOK's tf.gather over its one key space)
        fwd_s, bwd_s = dedup_expansion_seconds(ctx, "tables", sum(a for a, _ in expanded),
                                               sum(b for _, b in expanded), width, wire)
        before_fwd.append(ComputeOp(extra_name("embrace-expand", last), fwd_s))
        before_bwd.insert(0, ComputeOp(extra_name("embrace-merge", last), bwd_s))
    extra += [(fwd_name(consumer), op) for op in before_fwd] + [(bwd_name(last), op) for op in before_bwd]
    needed_by = before_fwd[0].id if before_fwd else fwd_name(consumer)
    grad_ready = before_bwd[-1].id if before_bwd else bwd_name(consumer)
    grad_consumer = bwd_name(last)
    if bwd_load.max() > base_bwd:
        # and for the busiest owner's scatter of n batches' gradients, after the alltoallv
        excess = ComputeOp(extra_name("embrace-busiest-owner-bwd", last), float(bwd_load.max() - base_bwd))
        extra.append((bwd_name(last), excess))
        grad_consumer = excess.id
    forward = Traffic.from_senders(vectors_from)
    nbytes = float(vectors_from.sum())
    sync.append(SyncTensor(name="embrace-fwd:tables", layer=last, op="alltoall", nbytes=nbytes,
                           category="embedding", ready_after=produced, needed_by=needed_by,
                           matrix=forward))
    sync.append(SyncTensor(name="embrace-bwd:tables", layer=last, op="alltoall", nbytes=nbytes,
                           category="embedding", ready_after=grad_ready,
                           needed_by=grad_consumer, matrix=forward.T))

    # the step waits for the owner with the most update work: its pieces' share of the updates
    busiest = int(np.argmax(upd_load))
    for t, *_ in per_table:
        update[t.layer] = 0.0
    for p in pieces:
        if p.gpu == busiest:
            update[per_table[p.table][0].layer] += piece_update[p.table, p.lookups, p.columns, p.rows]

    # memory: the GPU holding the most table parameters holds its pieces, no others
    owner = [p.gpu for p in pieces]
    table_params = np.bincount(owner, weights=[sizes[p.table] * p.params for p in pieces], minlength=n)
    heaviest = int(np.argmax(table_params))
    held = np.zeros(len(per_table))
    for p in pieces:
        held[p.table] += p.params if p.gpu == heaviest else 0.0
    # a share of a table's columns as the shard count memory_per_gpu divides it by
    shards = {t.table: (max(1, round(1 / h)) if h > 0 else 0) for (t, *_), h in zip(per_table, held)}
    buffers = {"embrace alltoall buffers (tables)": 2 * nbytes}

    even = lambda load, base: load.max() / base if base > 0 else 1.0
    where = (f"{len(set(owner))} GPUs" + (", the dense layers before them on GPU 0 over the global batch"
                                         if bottom_mlp == "model" else ""))
    if options.shard == "cols":
        how = f"{len(per_table)} tables' columns split evenly over {n} GPUs"
    elif fused:
        how = (f"{len(per_table)} tables' rows " + ("hashed" if options.shard == "hashed"
                                                    else "in contiguous blocks") + f" over {n} GPUs")
    elif options.placement == "memory_balanced":
        sliced = [p.table for p in pieces if p.columns < 1]
        how = (f"{len(per_table)} tables ({len(set(sliced))} cut into {len(sliced)} column slices) on "
               f"{where} by Merlin distributed-embeddings' memory_balanced deal")
    else:
        how = f"{len(per_table)} tables whole on {where} by DeepLearningExamples' greedy placement"
    notes.append(f"embrace {flag}: {how} ({np.bincount(owner).max()} at most per GPU); the busiest "
                 f"owner looks up {even(fwd_load, base_fwd):.2f}x an even share, holds "
                 f"{table_params.max() / table_params.sum() * 100:.0f} % of the table parameters, and sends "
                 f"{vectors_from.max() / nbytes * 100:.0f} % of the alltoallv bytes")
    if dedup:
        notes.append("embrace dedup (tables): each GPU sends each distinct row it reads once")
    return StrategyPlan(sync=tuple(sync), update_time=update,
                        memory=memory_per_gpu(model, embedding_shards=shards, sparse_embedding_grads=True,
                                              buffers=buffers),
                        extra=tuple(extra), notes=tuple(notes), layer_time_scale=scale)


@dataclass(frozen=True)
class Piece:
    """What GPU `gpu` holds of table `table` (an index into the plan's tables): the share of
    the table's lookups it serves, of each row's columns, of the table's parameters, and the
    distinct rows its update touches (None: the table's, as a whole table or column share)."""
    table: int
    gpu: int
    lookups: float = 1.0
    columns: float = 1.0
    params: float = 1.0
    rows: float | None = None


def placed_pieces(per_table, sizes, options, n: int) -> list[Piece]:
    """Every piece a placement puts on a GPU: whole tables (`sizes`: their parameters) by
    DeepLearningExamples' greedy, or Merlin distributed-embeddings' column slices and
    memory_balanced deal."""
    if options.placement != "memory_balanced":
        return [Piece(i, g) for i, g in enumerate(owners(sizes, n))]
    cut = []
    for i, (t, *_) in enumerate(per_table):
        widths = column_slices(t.vocab * t.dim, t.dim, options.column_slice_threshold, n)
        cut += [(i, w / t.dim) for w in widths]
    gpu = memory_balanced([sizes[i] * frac for i, frac in cut], n)
    return [Piece(i, g, columns=frac, params=frac) for (i, frac), g in zip(cut, gpu)]


def row_pieces(per_table, shard: str, dedup: bool, n: int) -> list[Piece]:
    """Each table's rows over the n GPUs (row_split), piece g serving its rows' share of what
    a GPU sends and updating the distinct rows of its part that the n batches touch. A table
    without token statistics splits evenly."""
    pieces = []
    for i, (t, _, total, _) in enumerate(per_table):
        split = row_split(t, shard, dedup, n, total)
        shares, rows = split if split is not None else (np.full(n, 1.0 / n), np.full(n, t.unique_union / n))
        pieces += [Piece(i, g, lookups=float(shares[g]), params=1.0 / n, rows=float(rows[g])) for g in range(n)]
    return pieces

"""embrace-2d: EmbRace's 2D communication scheduling (ICPP'22, arXiv 2110.09132).

The paper names four parts; each is an option, on by default, so an ablation
(`embsim compare --ablation`) shows what each contributes:

- reorder (1, "optimizes the model computation procedure"): backward computes every
  layer's input gradient first, down to the embeddings, then the weight gradients
  (`bwd-input:L` then `bwd:L`; for a layer with weights the two are GEMMs of equal
  FLOPs, dX = dY W^T and dW = X^T dY, so each takes half of the layer's backward). The
  embedding-side gradients, and their AlltoAll, are ready as early as the dependencies
  allow; weight gradients and dense AllReduces follow while the AlltoAll runs, input
  side first (our choice: the order the next forward needs them in; EmbRace's text
  does not say).
- defer (2, "relaxes the dependency of embeddings"): the next iteration reads only the
  rows its own batch touches; the part of each embedding payload it does not read is
  applied after the next forward (the deferred part of the layer's update), so its traffic
  overlaps the next forward. Row payloads split by rows (unique_next_overlap /
  unique_union), EmbRace's per-token gradient AlltoAll by lookups (lookup_fraction_next);
  the backward AlltoAll no longer blocks the embedding's backward. A pooled (bag) layer's
  gradient AlltoAll, one vector per sample, has no such split: refused (defer=off runs it).
- prefetch (2, the ids): a prefetching data loader knows the next batch one step ahead,
  so the token-id exchange for iteration k+1 runs during iteration k's backward instead
  of at the start of every iteration.
- cross_iteration (3, "a priority queue" over row blocks and dense tensors): every block
  is keyed by when the stream next needs it, across iterations: position of its consumer
  in one iteration's stream (per-layer updates), plus one stream length when the consumer
  is in the next iteration, plus one per iteration (queue_key). A gradient
  the next forward needs at its first layer outranks an activation it needs later. Off:
  keys relative to each op's own iteration (activations this iteration's stream is about
  to block on first), as P3 does.
- block / credit (3, 4): tensors are cut into blocks of partition_bytes, at most
  credit_bytes in flight; preemption happens at block boundaries, so priority decides
  bandwidth, not just admission. EmbRace publishes neither value; it runs on Horovod/NCCL
  collectives, so the defaults are ByteScheduler's values for an AllReduce backend, as
  for `priority` (reference workloads.md): blocks of 8,000,000 parameters (32 MB in fp32)
  and a credit of 16,000,000 (64 MB). ByteScheduler's parameter-server defaults (1M / 4M
  parameters) are `-o partition_bytes=4e6 -o credit_bytes=16e6`: every 4 MB block is a
  collective of its own that pays NCCL's per-operation and per-step costs and runs far
  below peak bandwidth (on 2x8 at 25 Gb/s, tests/schedulers' head-heavy model with
  reordering off steps in 35.6 ms with 0.5 MB blocks, 21.1 ms with 4 MB, 18.4 ms with the
  32 MB default; fifo 26.2 ms; measured on main 6e15116).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from types import MappingProxyType
from typing import Mapping

from ..errors import InputError, ModelNotSupported
from ..options import switch
from ..plan.names import DEFERRED, OpId, Role, bwd_input_name, bwd_name, stream_order, update_name
from ..plan.ops import ComputeOp
from ..plan.traits import Payload
from .base import SCHEDULERS
from .priority import FP32, PriorityScheduler, check_partition_sizes

EPS = 1e-9
DGRAD_SHARE = 0.5      # dX and dW of a layer with weights: equal FLOPs
SWITCHES = ("reorder", "defer", "prefetch", "cross_iteration")
IDS_TAG = "embrace-ids"   # the extra op after which EmbRace's token-id exchange may start


def split_layers(model) -> frozenset[str]:
    """Layers whose backward splits into an input-gradient and a weight-gradient part:
    dense weights, not the first layer (nothing below needs its input gradient), not an
    embedding-side layer (its weight gradient is the embedding's: it goes first)."""
    first = model.layers[0].name
    return frozenset(l.name for l in model.layers
                     if l.params > 0 and l.table is None and l.name != first)


def reordered(ids: list[OpId], split: frozenset[str]) -> list[OpId]:
    """One iteration's stream with backward reordered: the input-gradient chain (every
    layer, last to first; split layers contribute their input half), then the weight
    halves of the split layers, input side first: the next forward needs those gradients
    (reduced) in that order."""
    bwd = [i for i, n in enumerate(ids) if n.role is Role.BWD]
    if not bwd:
        return ids
    layers = [ids[i].layer for i in bwd]
    chain = [bwd_input_name(l) if l in split else bwd_name(l) for l in layers]
    weights = [bwd_name(l) for l in reversed(layers) if l in split]
    return ids[:bwd[0]] + chain + weights + ids[bwd[-1] + 1:]


@lru_cache(maxsize=32)
def stream_positions(layers: tuple[str, ...], split: frozenset[str]) -> dict[OpId, int]:
    """Positions in one iteration's stream under per-layer updates, as the engine lays it
    out (plan.names.stream_order) and this scheduler reorders it."""
    return {n: i for i, n in enumerate(reordered(stream_order(list(layers), per_layer=True), split))}


@dataclass(frozen=True)
class EmbRace2DOptions:
    reorder: bool = True            # (1) input gradients before weight gradients
    defer: bool = True              # (2) rows the next batch does not read after its forward
    prefetch: bool = True           # (2) the next batch's ids exchanged a step ahead
    cross_iteration: bool = True    # (3) one queue keyed by next use across iterations
    partition_bytes: float = 8_000_000 * FP32    # block size (ByteScheduler, AllReduce backend)
    credit_bytes: float = 16_000_000 * FP32      # bytes in flight (ByteScheduler, AllReduce backend)

    def __post_init__(self):
        for key in SWITCHES:
            object.__setattr__(self, key, switch(getattr(self, key), key))
        check_partition_sizes(self)


@SCHEDULERS.register("embrace-2d")
class EmbRace2DScheduler(PriorityScheduler):
    description = ("EmbRace 2D: backward reordered, rows the next batch skips deferred, ids prefetched, "
                   "one cross-iteration priority queue over blocks")
    Options = EmbRace2DOptions

    # set by transform() and build() for the plan being built
    _anchors: Mapping[OpId, OpId] = MappingProxyType({})
    _period = 0.0

    def check(self, strategy) -> None:
        if strategy.embedding_payload is Payload.NONE:
            raise InputError(f"--scheduler embrace-2d with --strategy {strategy.name}: no row-level "
                             f"split to defer (its embedding gradient is a dense or sketched tensor); "
                             f"use allgather, ps or embrace")
        if not strategy.per_table_embedding_traffic:
            fused = "shard=tables" if strategy.options.shard == "tables" else "exchange=fused"
            raise InputError(f"--scheduler embrace-2d with --strategy {strategy.name} --option {fused}: "
                             f"EmbRace's 2D scheduling splits each table's gradient by the rows the next "
                             f"batch reads, and {fused} fuses every table into one alltoallv; use fifo or "
                             f"priority, or shard=cols|rows|hashed with exchange=per_table")

    # ------------------------------------------------------------ computation
    def _split(self, ctx) -> frozenset[str]:
        return split_layers(ctx.model) if self.options.reorder else frozenset()

    def _layout(self, ctx) -> dict[OpId, int]:
        return stream_positions(tuple(l.name for l in ctx.model.layers), self._split(ctx))

    def rewrite_stream(self, stream, ctx):
        split = self._split(ctx)
        if not split:
            return stream
        by_id = {op.id: op for op in stream}
        out = []
        for op_id in reordered([op.id for op in stream], split):
            if op_id.role is Role.BWD_INPUT:
                whole = by_id[bwd_name(op_id.layer)]
                out.append(ComputeOp(op_id, whole.duration * DGRAD_SHARE))
            elif op_id.role is Role.BWD and op_id.layer in split:
                out.append(replace(by_id[op_id], duration=by_id[op_id].duration * (1 - DGRAD_SHARE)))
            else:
                out.append(by_id[op_id])
        return out

    # ---------------------------------------------------------- communication
    def transform(self, strategy_plan, ctx, strategy):
        self.check(strategy)
        if all(traffic.dense_grad for traffic in ctx.tables.values()):
            # every table falls back to a dense AllReduce: the plan is allreduce's, which
            # check refuses by name, so it is refused here too, not ranked as a gain
            raise ModelNotSupported(f"--scheduler embrace-2d with --strategy {strategy.name}: every "
                                    f"table's gradient is dense (a full softmax tied to it), so the plan "
                                    f"is allreduce's and there is no row-level split to defer; use fifo "
                                    f"or priority")
        payload = strategy.embedding_payload
        owner_of = {t.table: t.layer for t in ctx.tables.values()}
        split = self._split(ctx)
        first_backward = next(n for n in self._layout(ctx) if n.role in (Role.BWD, Role.BWD_INPUT))
        sync, update = [], dict(strategy_plan.update_time)
        deferred = dict(strategy_plan.deferred_update_time)
        extra = list(strategy_plan.extra)
        split_fraction: dict[str, float] = {}
        notes = list(strategy_plan.notes)
        for t in strategy_plan.sync:
            table = ctx.layer(t.layer).table
            traffic = ctx.tables.get(owner_of.get(table)) if table is not None else None
            if t.category != "embedding" or traffic is None or traffic.dense_grad:
                sync.append(t)
                continue
            owner = traffic.layer
            if t.ready_after.role is Role.BWD and t.ready_after.layer in split:
                # (1) an embedding-side gradient needs only the input gradient above it
                t = replace(t, ready_after=bwd_input_name(t.ready_after.layer))
            if t.ready_after.role is Role.EXTRA and t.ready_after.tag == IDS_TAG:
                if self.options.prefetch:
                    # (2) the next batch's ids are known a step ahead: staged and exchanged
                    # during this iteration's backward, read by the next iteration's lookup
                    extra = [(first_backward if op.id == t.ready_after else before, op) for before, op in extra]
                sync.append(t)
                continue
            if not self.options.defer:
                sync.append(t)
                continue
            rows_kept = traffic.unique_next_overlap / traffic.unique_union if traffic.unique_union else 1.0
            fraction = rows_kept if payload is Payload.ROWS else traffic.lookup_fraction_next
            needed = None if t.needed_by is None else t.needed_by.role
            if needed is None:                                       # gradient rows / tokens
                keep = fraction
                now, later = replace(t, update_of=update_name(owner)), replace(t, update_of=update_name(owner, True))
            elif needed is Role.BWD and payload is Payload.TOKENS:   # per-token gradient AlltoAll
                _refuse_pooled(ctx.layer(t.layer))
                keep = fraction
                now = replace(t, needed_by=None, update_of=update_name(owner))
                later = replace(t, needed_by=None, update_of=update_name(owner, True))
            elif needed is Role.FWD and t.ready_after == update_name(owner):   # PS pull of updated rows
                keep, now = fraction, t
                later = replace(t, ready_after=update_name(owner, True))
            elif needed is Role.FWD:                                 # forward lookups
                sync.append(t)
                continue
            else:
                raise InputError(f"--scheduler embrace-2d with --strategy {strategy.name}: cannot tell "
                                 f"which part of {t.name} ({payload.value}, needed by {t.needed_by}) the "
                                 f"next iteration needs; it splits gradients, pulls after the update "
                                 f"and per-token backward traffic")
            sync += _split(now, later, keep)
            if keep < 1.0 - EPS:
                split_fraction[owner] = keep
        for owner, keep in split_fraction.items():
            total = update.get(owner, 0.0)
            update[owner], deferred[owner] = total * keep, total * (1.0 - keep)
            notes.append(f"embrace-2d: {(1 - keep) * 100:.0f} % of {owner}'s embedding traffic "
                         f"deferred past the next forward")
        if self.options.defer and not split_fraction:
            notes.append("embrace-2d: nothing deferred (no per-row embedding traffic the next "
                         "batch leaves unread); vertical priority only")
        off = [s for s in SWITCHES if not getattr(self.options, s)]
        if not self.options.prefetch and not _exchanges_ids(strategy_plan.sync):
            # ps, allgather and embrace input=model read their ids locally: switching the
            # prefetch off changes nothing, which "parts off" would hide
            off.remove("prefetch")
            notes.append(f"embrace-2d: prefetch=off changes nothing: --strategy {strategy.name} "
                         f"exchanges no token ids to prefetch")
        if off:
            notes.append(f"embrace-2d: parts off: {', '.join(off)}")
        # where each extra op sits: just before its anchor (for next-use keys)
        self._anchors = {op.id: before for before, op in extra}
        return replace(strategy_plan, sync=tuple(sync), update_time=update, deferred_update_time=deferred,
                       extra=tuple(extra), notes=tuple(notes))

    def build(self, tensors, ctx):
        # one stream length per iteration: the key of an op of iteration k is its
        # consumer's position counted from iteration k's start
        self._period = float(len(self._layout(ctx))) if self.options.cross_iteration else 0.0
        return super().build(tensors, ctx)

    @property
    def priority_period(self) -> float:
        return self._period

    def queue_key(self, op, iteration=0):
        return (op.priority + iteration * self._period,)

    def priority_of(self, t, ctx) -> float:
        layout = self._layout(ctx)
        n = len(layout)
        if t.needed_by is not None:
            pos = layout[t.needed_by]
            ready = (layout[t.ready_after] if t.ready_after in layout
                     else layout[self._anchors[t.ready_after]] - 0.5 if t.ready_after in self._anchors
                     else -1)
            this_iteration = ready < pos
            if self.options.cross_iteration:
                return float(pos if this_iteration else n + pos)
            return float(pos - n if this_iteration else pos)
        pos = layout[t.update_of or update_name(t.layer)]
        return float(n + pos if self.options.cross_iteration else pos)


def _exchanges_ids(sync) -> bool:
    """Whether the plan exchanges token ids (EmbRace's id all_gather, after IDS_TAG extras)."""
    return any(t.ready_after.role is Role.EXTRA and t.ready_after.tag == IDS_TAG for t in sync)


def _refuse_pooled(layer) -> None:
    """The per-token split keeps the lookups whose row the next batch reads; a pooled
    layer's gradient AlltoAll carries one summed vector per sample, which the next batch
    needs if it reads any row of the bag: a different fraction, not modelled."""
    if layer.pooled:
        raise ModelNotSupported(f"--scheduler embrace-2d: layer {layer.name} pools its lookups (pooling:), "
                                f"so its gradient AlltoAll carries one vector per sample, not per lookup, "
                                f"and deferring the part the next batch does not read is not modelled; "
                                f"use --option defer=off, or --scheduler fifo or priority")


def _split(now, later, keep: float):
    """The part the next iteration needs (`now`, fraction keep) and the deferred rest."""
    if keep >= 1.0 - EPS:
        return [now]
    if keep <= EPS:
        return [replace(later, name=later.name + DEFERRED)]
    return [now.scaled(keep), replace(later.scaled(1.0 - keep), name=later.name + DEFERRED)]

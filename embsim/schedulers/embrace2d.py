"""embrace-2d: EmbRace's 2D communication scheduling (ICPP'22, arXiv 2110.09132).

Horizontal: the embedding communication the next iteration does not need is taken off
the critical path. The next batch's tokens are known one step ahead (a prefetching data
loader), so each embedding payload splits into the part the next forward reads and the
rest; the rest is deferred (it feeds the deferred part of the layer's update, which the
engine places after the next forward) and overlaps with it. Row payloads (allgather gradients,
PS push/pull) split by rows: unique_next_overlap / unique_union of the union is read
again; EmbRace's per-token gradient AlltoAll splits by lookups: lookup_fraction_next.
The backward AlltoAll then no longer blocks the embedding's backward: both parts become
gradients that the shard applies in its update, the needed part before the next forward.

Vertical: one priority queue over embedding and dense partitions, keyed by when the next
iteration needs each one: the position of its consumer in the stream (activations this
iteration's stream is about to block on come first). Partitions, credit and per-layer
updates as in `priority`.

Not modelled: EmbRace's reordering of backward computation (input gradients before
weight gradients) to produce the embedding's gradient earlier; the engine's compute
order is fixed per layer.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from ..plan.names import DEFERRED, OpId, Role, stream_order, update_name
from ..plan.traits import Payload
from ..errors import InputError
from .base import SCHEDULERS
from .priority import PriorityScheduler

EPS = 1e-9


@lru_cache(maxsize=32)
def next_iteration_layout(layers: tuple[str, ...]) -> dict[OpId, int]:
    """Stream positions under per-layer updates, exactly as the engine lays them out."""
    return {n: i for i, n in enumerate(stream_order(list(layers), per_layer=True))}


@SCHEDULERS.register("embrace-2d")
class EmbRace2DScheduler(PriorityScheduler):
    description = "EmbRace 2D: defer embedding rows the next batch skips; one queue keyed by next use"

    def check(self, strategy) -> None:
        if strategy.embedding_payload is Payload.NONE:
            raise InputError(f"--scheduler embrace-2d with --strategy {strategy.name}: no row-level "
                             f"split to defer (its embedding gradient is a dense or sketched tensor); "
                             f"use allgather, ps or embrace")

    def transform(self, strategy_plan, ctx, strategy):
        self.check(strategy)
        payload = strategy.embedding_payload
        owner_of = {t.table: t.layer for t in ctx.tables.values()}
        sync, update = [], dict(strategy_plan.update_time)
        deferred = dict(strategy_plan.deferred_update_time)
        split_fraction: dict[str, float] = {}
        for t in strategy_plan.sync:
            table = ctx.layer(t.layer).table
            traffic = ctx.tables.get(owner_of.get(table)) if table is not None else None
            if t.category != "embedding" or traffic is None or traffic.dense_grad:
                sync.append(t)
                continue
            owner = traffic.layer
            rows_kept = traffic.unique_next_overlap / traffic.unique_union if traffic.unique_union else 1.0
            fraction = rows_kept if payload is Payload.ROWS else traffic.lookup_fraction_next
            needed = None if t.needed_by is None else t.needed_by.role
            if needed is None:                                       # gradient rows / tokens
                keep = fraction
                now, later = replace(t, update_of=update_name(owner)), replace(t, update_of=update_name(owner, True))
            elif needed is Role.BWD and payload is Payload.TOKENS:   # per-token gradient AlltoAll
                keep = fraction
                now = replace(t, needed_by=None, update_of=update_name(owner))
                later = replace(t, needed_by=None, update_of=update_name(owner, True))
            elif needed is Role.FWD and t.ready_after == update_name(owner):   # PS pull of updated rows
                keep, now = fraction, t
                later = replace(t, ready_after=update_name(owner, True))
            elif needed is Role.FWD:                                 # index exchange, forward lookups
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
        if not split_fraction:
            split_fraction_note = ("embrace-2d: no sparse embedding traffic to defer (every table's "
                                   "gradient is dense); vertical priority only",)
        else:
            split_fraction_note = ()
        notes = tuple(strategy_plan.notes) + split_fraction_note + tuple(
            f"embrace-2d: {(1 - k) * 100:.0f} % of {o}'s embedding traffic deferred past the next forward"
            for o, k in split_fraction.items())
        return replace(strategy_plan, sync=tuple(sync), update_time=update, deferred_update_time=deferred,
                       notes=notes)

    def priority_of(self, t, ctx) -> float:
        """Position of the consumer in the stream: this iteration's (negative: the stream
        is about to block on it) or the next one's (gradients, a PS pull)."""
        layout = next_iteration_layout(tuple(l.name for l in ctx.model.layers))
        if t.needed_by is not None:
            pos = layout[t.needed_by]
            same_iteration = t.ready_after in layout and layout[t.ready_after] < pos
            if t.ready_after.role is Role.EXTRA:
                same_iteration = True        # after an extra op inserted before its consumer
            return float(pos - len(layout) if same_iteration else pos)
        return float(layout[t.update_of or update_name(t.layer)])


def _split(now, later, keep: float):
    """The part the next iteration needs (`now`, fraction keep) and the deferred rest."""
    if keep >= 1.0 - EPS:
        return [now]
    if keep <= EPS:
        return [replace(later, name=later.name + DEFERRED)]
    scale = lambda t, f: replace(t, nbytes=t.nbytes * f, matrix=None if t.matrix is None else t.matrix * f)
    return [scale(now, keep), replace(scale(later, 1.0 - keep), name=later.name + DEFERRED)]

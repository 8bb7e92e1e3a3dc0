"""Rows of a compare matrix that ran one plan under several names, said as such: a strategy
whose every table fell back to a dense AllReduce (a model whose only table has a dense
gradient) runs allreduce's plan, so under a scheduler that refuses allreduce itself its
lead is that scheduler's handling of allreduce's plan, not the strategy's."""

from __future__ import annotations

from ..compare import BASELINE
from .compare_why import plan_of


def fallback_notes(rows) -> list[str]:
    """One line per scheduler that refused the baseline's strategy yet ran strategies whose
    fifo row is the baseline's plan (compare.same_plans)."""
    by_label = {r.label: r for r in rows}
    strategy, fifo = BASELINE
    base = by_label.get(f"{strategy}/{fifo}")
    if base is None or base.refused is not None:
        return []
    out = []
    for scheduler in dict.fromkeys(r.scheduler for r in rows):
        refused = by_label.get(f"{strategy}/{scheduler}")
        if refused is None or refused.refused is None:
            continue
        ran = [r for r in rows if r.scheduler == scheduler and r.refused is None
               and f"{r.strategy}/{fifo}" in by_label
               and plan_of(by_label[f"{r.strategy}/{fifo}"]) == plan_of(base)]
        if not ran:
            continue
        fifos = ", ".join(f"{r.strategy}/{fifo}" for r in ran)
        out.append(f"{', '.join(r.label for r in ran)}: {fifos} run {base.label}'s plan (no sparse "
                   f"traffic left), so what {scheduler} gains there is its scheduling of "
                   f"{strategy}'s plan, which it refuses for --strategy {strategy} (refused: "
                   f"{strategy}/{scheduler})")
    return out


def label_text(row) -> str:
    """The strategy/scheduler cell: a row of an already ranked plan says whose."""
    return f"{row.label} (same plan as {row.same_plan_as})" if row.same_plan_as else row.label

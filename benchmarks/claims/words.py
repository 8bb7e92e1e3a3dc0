"""How the page writes figures and rows: its short names for strategy/scheduler labels (DDP,
embrace-2d, X/2D), ordinals, factors (1.23×), percentages with a true minus sign, ranges that
collapse when both ends print alike, "a, b and c" lists, a row's place in its matrix, and
"model / cluster"."""

from __future__ import annotations

from .data import CLUSTER_WORDS, Cell


def short(label: str) -> str:
    """The page's names: DDP for allreduce/fifo, embrace-2d for embrace under 2D, X/2D."""
    strategy, scheduler = label.split("/")
    if strategy == "allreduce":
        return "DDP" if scheduler == "fifo" else f"DDP under {'2D' if scheduler == 'embrace-2d' else scheduler}"
    if scheduler == "embrace-2d":
        return "embrace-2d" if strategy == "embrace" else f"{strategy}/2D"
    if strategy in ("fsdp", "distopt") and scheduler == "fifo":
        return strategy
    return label


def ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def x(v: float) -> str:
    return f"{v:.2f}×"


def pct(v: float, digits: int = 1) -> str:
    return f"{v * 100:.{digits}f} %".replace("-", "−")


def span(values, fmt="{:.2f}", sep="–") -> str:
    lo, hi = min(values), max(values)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)}{sep}{fmt.format(hi)}"


def listing(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def place(c: Cell, label: str) -> str:
    """Where a row stands in its matrix: last, or its rank and the rows behind it."""
    n = len(c.ranked)
    if c.rank(label) == n:
        return f"last ({c.step(label):.2f} ms)"
    behind = c.ranked[c.rank(label):]
    return (f"{ordinal(c.rank(label))} of {n} ({c.step(label):.2f} ms; only "
            + listing([f"{short(k)} ({c.step(k):.2f})" for k in behind]) + " slower)")


def order(c: Cell, labels: list[str], digits: int = 1) -> str:
    return ", ".join(f"{short(k)} {c.step(k):.{digits}f}" for k in labels)


def where(model: str, cluster: str) -> str:
    return f"{model} / {CLUSTER_WORDS[cluster]}"

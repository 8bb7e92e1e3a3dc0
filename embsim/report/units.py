"""Formatting of sizes, times and rates for people."""

import math


def human_bytes(n: float) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def human_time(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} µs"


def human_count(value: float) -> str:
    """A rate or count as people read it: thousands separated from 100 up (1,234), one
    decimal from 10 (12.4), two significant digits below (1.2, 0.83, 0.0041): a small
    throughput keeps its precision instead of rounding to "1" or "0"."""
    if not math.isfinite(value) or value == 0:
        return f"{value:g}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.{1 - math.floor(math.log10(abs(value)))}f}"


def human_rate(value: float, unit: str) -> str:
    """'0.83 samples/s', '12.4 tokens/s', '1,234 samples/s' (human_count, then the unit: a
    per-second unit takes no number agreement, and no figure prints as a bare 1)."""
    return f"{human_count(value)} {unit}"


def compute_source_text(source: str) -> str:
    """A run's compute source after a "compute times" label ("kernel model, H100 spec",
    "measured: trace X"), without the "compute: " prefix the label already says."""
    return source.removeprefix("compute: ")


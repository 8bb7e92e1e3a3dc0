"""How much a trace's layer points can be trusted: a point whose spread (inter-quartile range
over the repetitions) is a large share of its median was measured on a noisy host, and a
trace-driven run that reads it should say so, as calibrate should when it writes it."""

from __future__ import annotations

from .schema import Trace

# A point's spread beyond this share of its median: the repetitions disagree by more than
# the differences a strategy ranking turns on. The shipped CPU captures stay below 0.4.
NOISY_SPREAD = 0.5


def noisy_points(trace: Trace) -> list[tuple[float, str, int]]:
    """(spread / median, layer, batch) of every layer point past NOISY_SPREAD, worst first."""
    out = []
    for lt in trace.layers.values():
        for p in lt.points:
            for median, spread in ((p.fwd_s, p.fwd_spread_s), (p.bwd_s, p.bwd_spread_s)):
                if median > 0 and spread / median > NOISY_SPREAD:
                    out.append((spread / median, lt.name, p.batch))
    return sorted(out, reverse=True)


def quality_note(trace: Trace) -> str | None:
    """One line for the outputs that read the trace; None when every point is steady."""
    noisy = noisy_points(trace)
    if not noisy:
        return None
    share, layer, batch = noisy[0]
    return (f"noisy measurements: {len(noisy)} layer point(s) spread over {NOISY_SPREAD:.0%} of "
            f"their median (worst {layer} at batch {batch}: {share:.0%}; load average at "
            f"calibration {', '.join(f'{x:g}' for x in trace.provenance.loadavg)})")

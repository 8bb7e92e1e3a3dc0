"""Tables, JSON and plots of validation errors: mean and max |simulated/measured - 1|."""

from __future__ import annotations

import math

from ..collectives.validation import MIN_SIZE, CurveError
from ..curves import ErrorSummary, error_summary
from .steps import StepError



def json_number(x: float | None) -> float | None:
    """NaN (nothing to average) is not JSON: null instead."""
    return None if x is None or math.isnan(x) else x


def collective_summary(curves: list[CurveError]) -> ErrorSummary:
    """Over every point of every curve (sizes >= MIN_SIZE)."""
    return error_summary(p.error for c in curves for p in c.points if p.size >= MIN_SIZE)


def _summary_json(s: ErrorSummary) -> dict:
    return {"mean_abs_error": json_number(s.mean), "max_abs_error": json_number(s.max)}


def collective_json(curves: list[CurveError]) -> dict:
    rows = [{"curve": c.name, "op": c.op, "size": p.size, "measured_busbw": p.measured_busbw,
             "simulated_busbw": p.simulated_busbw, "error": p.error, "algo": p.algo,
             "proto": p.proto} for c in curves for p in c.points]
    return {"rows": rows, **_summary_json(collective_summary(curves)),
            "curves": [{"curve": c.name, "system": c.system, "op": c.op, "nccl": c.nccl,
                        **_summary_json(c.summary)}
                       for c in curves],
            "min_size": MIN_SIZE}


def collective_table(curves: list[CurveError], markdown: bool = False) -> str:
    lines = []
    for c in curves:
        if markdown:
            lines += [f"### {c.name} — {c.op}, NCCL {c.nccl}", "", f"{c.system}", "",
                      "| size (B) | measured busbw (GB/s) | simulated busbw (GB/s) | error | algo/proto |",
                      "|---:|---:|---:|---:|---|"]
            lines += [f"| {p.size} | {p.measured_busbw:.2f} | {p.simulated_busbw:.2f} | "
                      f"{p.error:+.1%} | {p.algo}/{p.proto} |" for p in c.points]
            lines += ["", f"|error| over sizes >= {MIN_SIZE // 1024} KiB: mean "
                          f"**{c.mean_error:.1%}**, max **{c.max_error:.1%}**", ""]
        else:
            lines.append(f"{c.name}: {c.op}, NCCL {c.nccl}, {c.system}")
            lines.append(f"  {'size':>12} {'measured':>10} {'simulated':>10} {'error':>8}  algo/proto")
            lines += [f"  {p.size:>12} {p.measured_busbw:>10.2f} {p.simulated_busbw:>10.2f} "
                      f"{p.error:>+8.1%}  {p.algo}/{p.proto}" for p in c.points]
            lines.append(f"  |error| (>= {MIN_SIZE // 1024} KiB): mean {c.mean_error:.1%}, "
                         f"max {c.max_error:.1%}")
    if not markdown:
        lines.append("")
        lines.append(f"{'curve':<40} {'mean':>7} {'max':>7}")
        lines += [f"{c.name:<40} {c.mean_error:>7.1%} {c.max_error:>7.1%}" for c in curves]
    total = collective_summary(curves)
    b = "**" if markdown else ""
    lines.append(f"{b}all curves: |simulated/measured - 1| mean {total.mean:.1%}, "
                 f"max {total.max:.1%}{b}")
    return "\n".join(lines)


def step_summary(rows: list[StepError]) -> ErrorSummary:
    return error_summary(r.error for r in rows if r.error is not None)


def step_json(rows: list[StepError]) -> dict:
    return {"rows": [{"strategy": r.strategy, "world": r.world, "measured_ms": r.measured_s * 1e3,
                      "simulated_ms": None if r.simulated_s is None else r.simulated_s * 1e3,
                      "error": r.error, "problem": r.problem, "topology": r.topology,
                      "compute_source": r.compute_source} for r in rows],
            **_summary_json(step_summary(rows))}


def step_table(rows: list[StepError], markdown: bool = False) -> str:
    if markdown:
        lines = ["| strategy | world | measured (ms) | simulated (ms) | error |", "|---|---:|---:|---:|---:|"]
        for r in rows:
            sim = "—" if r.simulated_s is None else f"{r.simulated_s * 1e3:.3f}"
            err = r.problem or f"{r.error:+.1%}"
            lines.append(f"| {r.strategy} | {r.world} | {r.measured_s * 1e3:.3f} | {sim} | {err} |")
    else:
        lines = [f"{'strategy':<12} {'world':>5} {'measured ms':>12} {'simulated ms':>13} {'error':>8}"]
        for r in rows:
            if r.simulated_s is None:
                lines.append(f"{r.strategy:<12} {r.world:>5} {r.measured_s * 1e3:>12.3f} "
                             f"{'-':>13} not simulated: {r.problem}")
            else:
                lines.append(f"{r.strategy:<12} {r.world:>5} {r.measured_s * 1e3:>12.3f} "
                             f"{r.simulated_s * 1e3:>13.3f} {r.error:>+8.1%}")
    if not markdown:
        # what was simulated, before the headline (which stays the last line)
        for topo in dict.fromkeys(r.topology for r in rows if r.topology):
            lines.append(f"simulated on {topo}")
        for source in dict.fromkeys(r.compute_source for r in rows if r.compute_source):
            lines.append(f"compute times: {source.removeprefix('compute: ')}")
        total = step_summary(rows)
        lines.append(f"|simulated/measured - 1|: mean {total.mean:.1%}, max {total.max:.1%}")
    return "\n".join(lines)


def plot_collectives(curves: list[CurveError], path) -> None:
    """Measured (dots) and simulated (lines) busbw against size, one panel per curve."""
    import matplotlib.pyplot as plt

    from ..report.plots import save_figure  # sets the Agg backend
    multi = [c for c in curves if len(c.points) > 1]
    singles = [c for c in curves if len(c.points) == 1]
    panels = len(multi) + (1 if singles else 0)
    cols = min(3, max(1, panels))
    rows = math.ceil(panels / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False)
    for ax, c in zip(axes.flat, multi):
        sizes = [p.size for p in c.points]
        ax.plot(sizes, [p.measured_busbw for p in c.points], "o", ms=4, label="measured")
        ax.plot(sizes, [p.simulated_busbw for p in c.points], "-", label="simulated")
        ax.set_xscale("log", base=2)
        ax.set_title(f"{c.name}\n{c.op}, mean {c.mean_error:.0%}, max {c.max_error:.0%}", fontsize=9)
        ax.set_xlabel("size (B)"); ax.set_ylabel("busbw (GB/s)"); ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    if singles:
        ax = axes.flat[len(multi)]
        meas = [c.points[0].measured_busbw for c in singles]
        sim = [c.points[0].simulated_busbw for c in singles]
        ax.plot(meas, sim, "o")
        top = max(meas + sim) * 1.1
        ax.plot([0, top], [0, top], "--", color="grey")
        ax.set_title("single points: simulated vs measured", fontsize=9)
        ax.set_xlabel("measured busbw (GB/s)"); ax.set_ylabel("simulated busbw (GB/s)")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[panels:]:
        ax.axis("off")
    fig.tight_layout()
    save_figure(fig, path, dpi=110)

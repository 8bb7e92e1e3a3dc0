"""Slide-ready plots (matplotlib, Agg backend: no display needed).

compare_bar_chart: step time of every strategy/scheduler, split into compute and exposed
communication, speedup over the baseline written on each bar; refused and not-fitting
combinations are marked, not hidden.
scaling_plot: step time against GPU count for a few strategy/scheduler series.
"""

from __future__ import annotations

import io
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

from ..atomic import atomic_write_bytes  # noqa: E402
from .memory_fit import failed_limits  # noqa: E402

COMPUTE_COLOUR = "#4C72B0"
COMM_COLOUR = "#DD8452"


def save_figure(fig, path, dpi: int = 150) -> None:
    """PNG written atomically: an interrupted run never leaves a half-written plot."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue())


def wrapped(text: str, width: int) -> str:
    """`text` (lines of it) wrapped at `width` characters: a compute-source label is one long
    line that would otherwise widen the figure past reading."""
    return "\n".join(line for part in text.split("\n") for line in textwrap.wrap(part, width))


def compare_bar_chart(result, path: str, title: str | None = None) -> None:
    """Horizontal bars, fastest at the top (result.rows is already ranked)."""
    rows = [r for r in result.rows if r.refused is None]
    refused = [r for r in result.rows if r.refused is not None]
    fig, ax = plt.subplots(figsize=(9, 0.45 * (len(rows) + len(refused)) + 1.6))
    labels = [r.label for r in rows] + [r.label for r in refused]
    y = list(range(len(labels)))[::-1]
    compute = [r.compute * 1e3 for r in rows]
    exposed = [r.exposed_comm * 1e3 for r in rows]
    ax.barh(y[:len(rows)], compute, color=COMPUTE_COLOUR, label="compute")
    ax.barh(y[:len(rows)], exposed, left=compute, color=COMM_COLOUR, label="exposed communication")
    top = max((c + e for c, e in zip(compute, exposed)), default=1.0)
    for yi, r, c, e in zip(y, rows, compute, exposed):
        text = f"{r.step_time * 1e3:.1f} ms  ×{r.speedup:.2f}"
        if r.exposed_by_op:
            text += f"  waits on {r.exposed_by_op[0][0]}"       # what its exposed time is, most
        if not r.fits_in_memory:
            text += f"  (does not fit: {failed_limits(r.memory_per_gpu, r.hbm_bytes, r.host_memory)})"
        ax.text(c + e + top * 0.01, yi, text, va="center", fontsize=8)
    for yi in y[len(rows):]:
        # clear of the y axis, on a white box so no grid line runs through it
        ax.text(top * 0.04, yi, "refused (see table)", va="center", ha="left", fontsize=8,
                color="grey", bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})
    ax.set_yticks(y, labels, fontsize=9)
    ax.set_xlim(0, top * 1.45)
    ax.set_xlabel(wrapped(f"simulated step time (ms) — {result.compute_source}", 110)
                  if result.compute_source else "simulated step time (ms)", fontsize=8)
    cfg = result.config
    ax.set_title(title or f"{cfg.model} on {cfg.topology} ({result.n_gpus} GPUs): "
                 f"speedup over {result.baseline}", fontsize=10)
    ax.legend(loc="upper right", fontsize=8)
    ax.grid(axis="x", alpha=0.3)
    save_figure(fig, path)


def scaling_plot(series: dict[str, list[tuple[int, float]]], path: str, title: str) -> None:
    """series: label -> [(gpus, step time s), ...]."""
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for label, points in series.items():
        points = sorted(points)
        ax.plot([g for g, _ in points], [t * 1e3 for _, t in points], marker="o", label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    plain = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}")
    ax.xaxis.set_major_formatter(plain)
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(plain)
    ax.tick_params(axis="y", which="minor", labelsize=7)
    ax.set_xlabel("GPUs")
    ax.set_ylabel("simulated step time (ms, per-GPU batch fixed)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    save_figure(fig, path)

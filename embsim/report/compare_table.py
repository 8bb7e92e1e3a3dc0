"""The human table of a compare matrix: ranked rows, then refusals and notes."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from ..compare import TRAINING_MEAN_ERROR, best_fitting, unresolved_with_best, untuned_defaults
from .compare_plans import fallback_notes, label_text
from .memory_fit import failed_limits, shortfalls
from .notes import attributed, condense
from .provenance import topology_file_text, with_token_source
from .summary import workload_text
from .units import compute_source_text, human_bytes, human_time
from ..words import counted


def resolution_text(result) -> str:
    """Which rows the model cannot order against the best (embsim.compare.unresolved_with_best)."""
    if all(r.refused is not None for r in result.rows):
        return "resolution: no row ran"
    best = best_fitting(result.rows)
    if best is None:
        return "resolution: no row fits in memory, so none is ranked as the best"
    others = [r for r in result.rows if r is not best and r.refused is None and r.fits_in_memory
              and r.same_plan_as is None]
    unchecked = f" ({HOST_NOT_CHECKED})" if host_unchecked(best) else ""
    if not others:
        return (f"resolution: {best.label} is the only fitting plan that ran{unchecked}: nothing to "
                f"rank it against")
    near = unresolved_with_best(result.rows)
    limit = (f"{TRAINING_MEAN_ERROR:.1%} of the best, the model's mean error on published training "
             f"throughput (docs/validation.md)")
    if not near:
        return (f"resolution: {best.label}{unchecked} leads every other fitting row by more than {limit}"
                + _untuned(best))
    return (f"resolution: {', '.join(near)} within {limit}: not resolved, their order against "
            f"{best.label} could flip on real hardware")


def _untuned(best) -> str:
    """A caveat when the best row's scheduler ran knobs its authors tune per job at their
    defaults: the lead is at those defaults (compare --ablation, -o NAME.credit_bytes=...)."""
    keys = untuned_defaults(best)
    if not keys:
        return ""
    # the scheduler named, not "its": the row's strategy has authors too
    return (f", at {best.scheduler}'s default {' and '.join(keys)}, which the {best.scheduler} authors' "
            f"systems tune per job: try -o {best.scheduler}.credit_bytes=... (or compare --ablation) "
            f"before trusting the lead")


# a row that fits in HBM and keeps tables or state in a node's host memory the topology
# does not size (no host_memory_gb): it fits as far as was checked
HOST_NOT_CHECKED = "host not checked"


def host_unchecked(row) -> bool:
    """The row keeps tables or state in host memory whose size the topology does not give,
    so its fit there was not checked (HostMemoryNeed.fits None)."""
    return row.host_memory is not None and row.host_memory.fits is None


def fits_text(row) -> str:
    """The fits column: 'yes', 'yes (host not checked)', or 'NO (HBM)' / 'NO (host)'."""
    if row.fits_in_memory:
        return f"yes ({HOST_NOT_CHECKED})" if host_unchecked(row) else "yes"
    return f"[red]NO ({failed_limits(row.memory_per_gpu, row.hbm_bytes, row.host_memory)})[/red]"


def print_matrix(result, console: Console | None = None, all_notes: bool = False) -> None:
    console = console or Console(width=160)
    cfg = result.config
    t = Table(title=f"{cfg.model} on {cfg.topology} ({counted(result.n_gpus, 'GPU')}), fitting rows first, by step "
                    f"time; speedup over {result.baseline}", title_justify="left")
    for col in ("rank", "strategy/scheduler", "step", "speedup", "exposed comm", "sent per GPU",
                "memory per GPU", "fits"):
        t.add_column(col, justify="left" if col == "strategy/scheduler" else "right")
    ranks: dict[str, int] = {}
    for r in result.rows:
        if r.refused is not None:
            continue
        # a plan already ranked keeps its rank: one result, however many names run it
        if r.same_plan_as is None:
            ranks[r.label] = len(ranks) + 1
        rank = f"={ranks[r.same_plan_as]}" if r.same_plan_as else str(ranks[r.label])
        t.add_row(rank, label_text(r), human_time(r.step_time),
                  f"{r.speedup:.2f}x", human_time(r.exposed_comm), human_bytes(r.comm_bytes_per_gpu),
                  human_bytes(r.memory_per_gpu), fits_text(r))
    console.print(t)
    # a node's host memory in full (the memory column shows what an HBM row needs)
    for r in result.rows:
        if r.refused is None:
            for limit in shortfalls(None, None, r.host_memory):
                console.print(f"does not fit: {r.label}: {limit}")
    console.print(resolution_text(result))
    for line in fallback_notes(result.rows):
        console.print(f"same plan: {line}")
    console.print(f"compute times: {compute_source_text(result.compute_source)}")
    for line in provenance_lines(result):
        # whole lines, never wrapped or read as markup: a path or option value is copied as is
        console.print(line, soft_wrap=True, markup=False, highlight=False)
    for r in result.rows:
        if r.refused is not None:
            console.print(f"refused: {r.label}: {r.refused}")
    notes = list(dict.fromkeys(attributed(r, n) for r in result.rows for n in r.notes))
    for n in (notes if all_notes else condense(notes)):
        console.print(f"note: {n}")


def provenance_lines(result) -> list[str]:
    """What the matrix ran on and with: the topology file, the workload, and each strategy's
    and scheduler's options with where each came from (default, model file, --option)."""
    base = getattr(result, "ran_baseline", None)
    lines = []
    if base is not None and base.cluster is not None and base.cluster.file:
        lines.append(f"topology file: {topology_file_text(base.cluster.file)}")
    if base is not None and base.workload:
        lines.append(f"workload: {workload_text(with_token_source(base.workload, result.config))}")
    texts = [r.options.text(component) for r in result.rows if r.options is not None
             for component in ("strategy", "scheduler")]
    return lines + [f"options: {text}" for text in dict.fromkeys(texts)]

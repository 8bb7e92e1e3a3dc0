"""The human summary of one simulation: a rich table of where the time goes."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from ..engine.result import most_first
from ..schedulers.ddp_passes import BUCKET_BUFFERS
from .efficiency_base import efficiency_base
from .memory_fit import shortfalls
from .notes import condense
from .provenance import topology_file_text, workload_record
from .units import compute_source_text, human_bytes, human_rate, human_time
from ..words import counted
from ..workload.torch_cp import LABELS as CP_LABELS
from ..workload.host_memory import need_text
from ..workload.tokens import DEFAULT_ZIPF_S


def print_summary(result, console: Console | None = None, all_notes: bool = False) -> None:
    console = console or Console()
    topo = result.cluster
    title = (f"{result.model} on {topo.preset} {topo.nodes}x{topo.gpus_per_node} "
             f"({counted(topo.gpus, 'GPU')}) — {result.strategy}/{result.scheduler}")
    t = Table(title=title, show_header=False, title_justify="left")
    t.add_column("what", style="bold")
    # folded, never cut with "…": a cell is the record of what ran
    t.add_column("value", overflow="fold")
    workload = workload_record(result) if result.workload else {}
    if workload:
        t.add_row("workload", workload_text(workload))
    t.add_row("step time", human_time(result.step_time))
    fill = result.workload.get("token_fill") if result.workload else None
    real = f" (real target tokens, {fill:.3f} of the token budget)" if fill else ""
    t.add_row("throughput", f"{human_rate(result.samples_per_s, 'samples/s')}, "
                            f"{human_rate(result.tokens_per_s, 'tokens/s')}{real}")
    if result.scaling_efficiency is not None:
        k = (result.workload or {}).get("tensor_parallel")
        p = (result.workload or {}).get("pipeline_parallel")
        c = (result.workload or {}).get("context_parallel")
        replica = (k or 1) * (p or 1) * (c or 1)
        of = (f"{topo.gpus // replica} x one pipeline of {p} stages on {replica} GPUs" if p
              else f"{topo.gpus // replica} x one replica of {replica} GPUs (context parallel {c}"
                   + (f" x tensor parallel {k}" if k else "") + ")" if c
              else f"{topo.gpus // k} x one tensor-parallel group of {k} GPUs" if k
              else f"{topo.gpus} x one GPU" + efficiency_base(result.strategy, result.scheduler))
        t.add_row("scaling efficiency", f"{result.scaling_efficiency * 100:.1f} % of {of}")
    share = result.exposed_comm / result.step_time if result.step_time else 0.0
    stretch = result.compute_stretch
    t.add_row("compute", human_time(result.compute) + (
        f", of which {human_time(stretch)} is the slowdown while its collectives run" if stretch >= 1e-6 else ""))
    passes = result.bucket_passes
    if passes:
        # DDP's bucket copies and divides run on the compute stream: named, not hidden in it
        t.add_row("  DDP bucket passes", f"{human_time(sum(s for _, s in passes))} of the compute: "
                  + "; ".join(f"{p.what} {human_time(s)} ({p.source})" for p, s in passes))
    t.add_row("exposed communication", f"{human_time(result.exposed_comm)} ({share * 100:.1f} % of the step)")
    waited = most_first(result.exposed_by_op)
    if waited:
        # what the slowest GPUs' compute stream sat waiting for: the exposed time, by collective
        t.add_row("  waiting on", ", ".join(f"{op} {human_time(s)}" for op, s in waited))
    if result.comm_wall:
        # the rest of that wall ran under compute: what overlap hid
        # the copies and host work around the transfers (a PS's gathers into host memory)
        # are not transfers, but the compute stream waits for them too (exposed communication)
        besides = ("; their copies and host work around them, which exposed communication "
                   "counts, not included" if any(v > 0 for v in result.comm_around.values()) else "")
        t.add_row("  collectives running", f"{human_time(result.comm_wall)} of the step "
                  f"({min(1.0, result.comm_wall / result.step_time) * 100:.1f} %), any of them{besides}")
    for op, nbytes in sorted(result.comm_bytes_per_gpu.items()):
        count = result.comm_count.get(op)
        what = f"{count:,.0f} collective{'' if round(count) == 1 else 's'}, " if count else ""
        around = result.comm_around.get(op, 0.0)
        extra = (f", + {human_time(around)} of copies and host work around them" if around > 0 else "")
        t.add_row(f"  {op} per GPU", f"{human_bytes(nbytes)} in {what}{human_time(result.comm_time.get(op, 0.0))} "
                  f"summed{extra}")
    busiest = result.busiest_link
    if busiest:
        kind, mean, peak = busiest
        # "peak": the hottest link's busy share of the whole step, not an instant's peak
        t.add_row("busiest link class", f"{kind}: hottest link busy {peak * 100:.1f} % of the step on "
                  f"average, the class {mean * 100:.1f} %")
    if result.net_bytes_per_node is not None:
        t.add_row("into the network", f"{human_bytes(result.net_bytes_per_node)} a node a step")
    mem = result.memory.as_dict()
    t.add_row("memory per GPU", f"{human_bytes(mem['total'])} of {human_bytes(result.hbm_bytes)} "
              f"(params {human_bytes(mem['params'])}, grads {human_bytes(mem['grads'])}, "
              f"optimizer {human_bytes(mem['optimizer_state'] + mem['master_weights'])}, "
              f"activations {human_bytes(mem['activations'])}"
              + (f", buffers {human_bytes(mem['buffers'])}" if mem["buffers"] else "")
              + _bucket_text(mem["by_component"]) + ")")
    if result.memory.host is not None:
        # what the strategy keeps in a node's host memory (ps servers' shards, CPU tables)
        t.add_row("host memory", need_text(result.memory.host))
    t.add_row("compute times", compute_source_text(result.compute_source))
    # events, not wall time: the same inputs and seed print the same table
    t.add_row("simulated", f"{result.events:,} events")
    console.print(t)
    # file paths on lines of their own, never wrapped or elided: copied whole from any output
    for what, path in (("topology file", topology_file_text(topo.file) if topo.file else None),
                       ("corpus", workload.get("corpus"))):
        if path:
            console.print(f"{what}: {path}", soft_wrap=True, markup=False, highlight=False)
    for limit in shortfalls(mem["total"], result.hbm_bytes, result.memory.host):
        console.print(f"[bold red]WARNING: does not fit: {limit}.[/bold red]")
    for note in (result.notes if all_notes else condense(result.notes)):
        console.print(f"note: {note}")


def _bucket_text(parts: dict) -> str:
    """', of which DDP flat gradient buckets 16.8 GB': the data-parallel wrapper's gradient
    buckets among the buffers, named (schedulers.ddp_passes.bucket_memory); "" without."""
    named = [(name, parts[name]) for name in BUCKET_BUFFERS.values() if parts.get(name)]
    return "".join(f", of which {name} {human_bytes(nbytes)}" for name, nbytes in named)


def workload_text(w: dict) -> str:
    """One line of what was simulated, so two outputs can be told apart: per-GPU batch,
    sequence, precision, and whichever of accumulation, jitter (with its seed), padding,
    straggler, a --zipf other than the default or a --corpus were set."""
    wide = [name for key, name in (("params", "parameters"), ("tables", "tables")) if w.get(key)]
    kept = f"; {' and '.join(wide)} FP32" if wide else ""           # what autocast leaves FP32
    dtype = w["dtype"] + (f" ({w['amp']}{kept})" if w.get("amp") else "")
    k = w.get("tensor_parallel")
    per = (f"per tensor-parallel group of {k} GPUs (tensor parallel {k}"
           f"{', sequence parallel' if w.get('sequence_parallel') else ''})" if k else "per GPU")
    if w.get("pipeline_parallel"):
        v = w.get("virtual_pipeline")
        blocking = ", blocking p2p" if w.get("p2p_overlap") is False else ""
        per += (f", pipeline parallel {w['pipeline_parallel']} x {v} virtual (interleaved 1F1B{blocking})" if v
                else f", pipeline parallel {w['pipeline_parallel']} (1F1B)")
    if w.get("context_parallel"):
        c = w["context_parallel"]
        per = (f"per replica of {c * (k or 1)} GPUs (" + (f"tensor parallel {k}, " if k else "")
               + f"context parallel {c}: each GPU {w['seq'] // c} of the seq's tokens, "
               + CP_LABELS[w.get("context_parallel_impl") or "te"] + ")")
    parts = [f"batch {w['batch']} x seq {w['seq']} {per}, {dtype}"]
    if w.get("optimizer"):
        parts.append(f"optimizer {w['optimizer']}")
    if w.get("untie_outputs"):
        parts.append("output projections untied")
    if w.get("accumulate", 1) != 1:
        sync = " (synchronised every micro-batch)" if w.get("accumulate_sync") == "every" else ""
        parts.append(f"accumulate {w['accumulate']}{sync}")
    if w.get("jitter"):
        lengths = f", lengths {w['lengths']}" if w.get("lengths") else ""
        parts.append(f"jitter {w['jitter']} (seed {w['seed']}{lengths})")   # the seed only draws jitter
    if w.get("padding"):
        lengths = f" (lengths {w['lengths']})" if w.get("lengths") else ""
        parts.append(f"padding {w['padding']}{lengths}")     # the compute line says what it made
    if w.get("straggler"):
        parts.append(f"straggler {w['straggler']}")
    if w.get("corpus"):
        parts.append("tokens from the --corpus file (below)")
    elif w.get("zipf") is not None and w["zipf"] != DEFAULT_ZIPF_S:
        parts.append(f"tokens Zipf s={w['zipf']:g}")      # the default unsaid here; the JSON always has it
    return ", ".join(parts)

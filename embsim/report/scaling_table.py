"""The text table of a scaling curve (`embsim scale`)."""

from __future__ import annotations

from .memory_fit import shortfalls
from .summary import workload_text
from .units import compute_source_text, human_bytes, human_count
from ..words import counted


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def scaling_table(curve, title: str) -> str:
    # per-GPU throughput against the smallest run: not simulate's "vs N x one GPU"
    smallest = f"vs {counted(curve[0].gpus, 'GPU')}" if curve else "vs smallest"
    lines = [title, f"{'GPUs':>6} {'topology':>20} {'step ms':>10} {'samples/s':>12} {smallest:>12} "
                    f"{'compute ms':>11} {'exposed ms':>11}  waiting most on"]
    for c in curve:
        if c.error:
            lines.append(f"{c.gpus:6d} {c.topology:>20} failed: {c.error}")
        else:
            # a point that needs more than the GPU's HBM or a node's host memory is flagged
            # on its own row, naming the limit
            # (a row kept from before hbm_bytes was recorded: its memory per GPU alone)
            limits = (shortfalls(c.memory_per_gpu_bytes, c.hbm_bytes, c.host_memory)
                      or [f"{human_bytes(c.memory_per_gpu_bytes)} per GPU"])
            over = f"  does not fit: {'; '.join(limits)}" if c.fits_in_memory is False else ""
            waited = c.most_waited
            why = (f"{_ms(c.compute_ms):>11} {_ms(c.exposed_comm_ms):>11}  "
                   + (f"{waited[0]} {waited[1]:.3f} ms" if waited else "-"))
            lines.append(f"{c.gpus:6d} {c.topology:>20} {c.step_time_ms:10.3f} "
                         f"{human_count(c.samples_per_s):>12} {c.efficiency:12.3f} {why}{over}")
    lines += _workload_lines(curve)
    for source in dict.fromkeys(c.compute_source for c in curve if c.compute_source):
        lines.append(f"compute times: {compute_source_text(source)}")
    return "\n".join(lines)


def _workload_lines(curve) -> list[str]:
    """What was simulated (jitter and its seed, a --zipf, ...): one line when every point
    ran the same, else one per GPU count (the model's global batch may set accumulate)."""
    texts = {c.gpus: workload_text(c.workload) for c in curve if c.workload}
    if len(set(texts.values())) == 1:
        return [f"workload: {next(iter(texts.values()))}"]
    return [f"workload at {counted(n, 'GPU')}: {text}" for n, text in texts.items()]

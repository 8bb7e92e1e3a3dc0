"""Scaling curves (step time, throughput, efficiency against GPU count), built as a sweep."""

from __future__ import annotations

from dataclasses import dataclass

from ..engine.result import most_first
from ..errors import InputError
from ..topology import TopologySpec, load_topology
from ..workload.host_memory import HostMemoryNeed
from .spec import SweepPoint, config_hash, with_trace_defaults


@dataclass(frozen=True)
class ScalePoint:
    gpus: int
    topology: str
    step_time_ms: float | None     # milliseconds, as simulate's and compare's step_time_ms
    samples_per_s: float | None
    efficiency: float | None       # throughput per GPU relative to the smallest run
    error: str | None
    compute_source: str = ""       # measured (trace) or "compute: kernel model ..."
    # the run's memory per GPU and whether it fits the GPU's HBM and, where checked, the
    # host memory of a node holding the strategy's servers (None: the point failed)
    memory_per_gpu_bytes: float | None = None
    fits_in_memory: bool | None = None
    # why the curve bends: the step's compute and exposed communication, and the exposed
    # time by the collective the slowest GPUs waited on (simulate's exposed_by_op_ms)
    compute_ms: float | None = None
    exposed_comm_ms: float | None = None
    exposed_by_op_ms: dict | None = None
    # what was simulated (simulate's workload block: batch, seq, dtype, jitter, seed, zipf ...)
    workload: dict | None = None
    hbm_bytes: float | None = None
    host_memory: HostMemoryNeed | None = None     # simulate's host_memory, read back

    @property
    def most_waited(self) -> tuple[str, float] | None:
        """(op, ms) the step's exposed time waited on most, or None."""
        waits = most_first(self.exposed_by_op_ms or {})
        return waits[0] if waits else None


def parse_gpus(text: str) -> list[int]:
    items = text.split(",")
    if any(not x.strip() for x in items):
        # "8,,16" ran 8 and 16 as if the gap were not there: a dropped count is a typo
        raise InputError(f"--gpus {text!r}: an empty item; expected a comma-separated list of integers")
    try:
        gpus = [int(x) for x in items]
    except ValueError:
        raise InputError(f"--gpus {text!r}: expected a comma-separated list of integers") from None
    if not gpus or any(g <= 0 for g in gpus) or gpus != sorted(set(gpus)):
        raise InputError(f"--gpus {text!r}: need positive, distinct, increasing GPU counts")
    return gpus


def topology_for(preset: str, gpus: int) -> str:
    """PRESET:NxG with the preset's GPUs per node (fewer GPUs: one partly used node)."""
    spec = TopologySpec.parse(preset)
    per_node = load_topology(TopologySpec(spec.where)).gpus_per_node
    if gpus <= per_node:
        return str(spec.with_shape(1, gpus))
    if gpus % per_node:
        raise InputError(f"--gpus {gpus}: not a whole number of {spec.name} nodes "
                         f"({per_node} GPUs each)")
    return str(spec.with_shape(gpus // per_node, per_node))


def scale_points(preset: str, gpus: list[int], base: dict) -> list[SweepPoint]:
    """One point per GPU count; with a trace, its batch and seq as `simulate --trace` takes
    them, and a --model it did not measure refused (spec.with_trace_defaults)."""
    points, resolved, digests = [], {}, {}
    for i, n in enumerate(gpus):
        config = dict(base, topology=topology_for(preset, n), efficiency_baseline=False)
        config = with_trace_defaults(config, resolved)
        points.append(SweepPoint(index=i, config=config, hash=config_hash(config, digests)))
    return points


def scaling_curve(points: list[SweepPoint], rows: dict[str, dict]) -> list[ScalePoint]:
    out, first = [], None
    for p in points:
        row = rows.get(p.hash) or {"status": "error", "error": "not run"}
        gpus = TopologySpec.parse(p.config["topology"]).n_gpus
        if row["status"] != "ok":
            out.append(ScalePoint(gpus, p.config["topology"], None, None, None, row.get("error")))
            continue
        res = row["result"]
        per_gpu = res["samples_per_s"] / gpus
        if first is None:
            first = per_gpu
        out.append(ScalePoint(gpus, p.config["topology"], res["step_time_ms"],
                              res["samples_per_s"], per_gpu / first, None,
                              res.get("compute_source", ""), res.get("memory_per_gpu_bytes"),
                              res.get("fits_in_memory"), res.get("compute_ms"),
                              res.get("exposed_comm_ms"), res.get("exposed_by_op_ms"),
                              res.get("workload"), res.get("hbm_bytes"),
                              HostMemoryNeed.from_dict(res["host_memory"]) if res.get("host_memory") else None))
    return out


def plot_scaling(curve: list[ScalePoint], path, title: str) -> None:
    import matplotlib.pyplot as plt

    from ..report.plots import COMM_COLOUR, COMPUTE_COLOUR, save_figure, wrapped  # sets the Agg backend
    ok = [c for c in curve if c.error is None]
    fig, (a, b, w) = plt.subplots(1, 3, figsize=(14, 4.4))
    a.plot([c.gpus for c in ok], [c.samples_per_s for c in ok], "o-", label="simulated")
    a.plot([c.gpus for c in ok], [ok[0].samples_per_s * c.gpus / ok[0].gpus for c in ok], "--",
           color="grey", label="linear")
    a.set_xscale("log", base=2); a.set_yscale("log")
    a.set_xlabel("GPUs"); a.set_ylabel("samples/s"); a.legend(); a.grid(alpha=0.3)
    b.plot([c.gpus for c in ok], [c.efficiency for c in ok], "o-")
    b.set_xscale("log", base=2); b.set_ylim(0, 1.05)
    b.set_xlabel("GPUs"); b.set_ylabel("efficiency vs smallest"); b.grid(alpha=0.3)
    # why it bends: each step split into compute and exposed communication
    split = [c for c in ok if c.compute_ms is not None and c.exposed_comm_ms is not None]
    x = range(len(split))
    w.bar(x, [c.compute_ms for c in split], color=COMPUTE_COLOUR, label="compute")
    w.bar(x, [c.exposed_comm_ms for c in split], bottom=[c.compute_ms for c in split],
          color=COMM_COLOUR, label="exposed communication")
    for i, c in enumerate(split):
        if c.most_waited:
            w.text(i, c.compute_ms + c.exposed_comm_ms, f" {c.most_waited[0]}", rotation=90,
                   ha="center", va="bottom", fontsize=7)
    w.set_xticks(list(x), [str(c.gpus) for c in split])
    w.set_xlabel("GPUs"); w.set_ylabel("step (ms)"); w.legend(fontsize=8); w.grid(axis="y", alpha=0.3)
    w.margins(y=0.25)
    fig.suptitle(wrapped(title, 150), fontsize=9)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)

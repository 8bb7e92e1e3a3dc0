"""The runs behind docs/results.md's explanations ("why X wins there"): the same cells as
the matrices with one input changed (no interference, no GPU speed variation), the
breakdowns the prose quotes (time per collective, compute per role on the slowest GPU,
the DDP wrapper's passes, a lookup AlltoAll's wait), the collective model's AllReduce curves the block-size discussion quotes, and the
scheduler test's head-heavy model. Writes docs/results/checks.json; results_figures.py
prints it. Run from the repository root:

    .venv/bin/python benchmarks/results_checks.py
"""

from __future__ import annotations

import importlib.util
import json
import tempfile
from collections import Counter
from pathlib import Path

from embsim.atomic import atomic_write_text
from embsim.collectives import CollectiveModel
from embsim.collectives import nccl_tests as nt
from embsim.engine.run import SimulationConfig, simulate
from embsim.strategies.fsdp import units
from embsim.topology import load_topology
from embsim.workload import load_model

ITERATIONS = 3          # as results_matrix.sh, so the unchanged runs are the tables' rows
RTX, H100, H100_1024 = "pcie-rtx3090:4x4", "dgx-h100:16x8", "dgx-h100:128x8"
# (label, topology, model, strategy, scheduler, SimulationConfig overrides)
RUNS = (
    ("gnmt rtx embrace/embrace-2d", RTX, "gnmt", "embrace", "embrace-2d", {}),
    ("gnmt rtx embrace/embrace-2d, 32 MB credit", RTX, "gnmt", "embrace", "embrace-2d",
     {"scheduler_options": {"credit_bytes": 32e6}}),
    ("gnmt rtx embrace/embrace-2d, interference 0", RTX, "gnmt", "embrace", "embrace-2d", {"interference": 0.0}),
    ("gnmt rtx allgather/embrace-2d", RTX, "gnmt", "allgather", "embrace-2d", {}),
    ("gnmt rtx allgather/embrace-2d, interference 0", RTX, "gnmt", "allgather", "embrace-2d", {"interference": 0.0}),
    ("gnmt h100 fsdp/fifo", H100, "gnmt", "fsdp", "fifo", {}),
    ("gnmt h100 fsdp/fifo, interference 0", H100, "gnmt", "fsdp", "fifo", {"interference": 0.0}),
    ("gnmt h100 allreduce/fifo", H100, "gnmt", "allreduce", "fifo", {}),
    ("gnmt h100 allreduce/fifo, interference 0", H100, "gnmt", "allreduce", "fifo", {"interference": 0.0}),
    ("lstm-lm1b rtx fsdp/fifo, interference 0", RTX, "lstm-lm1b", "fsdp", "fifo", {"interference": 0.0}),
    ("lstm-lm1b rtx allreduce/fifo, interference 0", RTX, "lstm-lm1b", "allreduce", "fifo", {"interference": 0.0}),
    ("lstm-lm1b rtx allreduce/fifo, variation 0", RTX, "lstm-lm1b", "allreduce", "fifo", {"gpu_variation": 0.0}),
    ("lstm-lm1b rtx allreduce/priority, variation 0", RTX, "lstm-lm1b", "allreduce", "priority", {"gpu_variation": 0.0}),
    ("lstm-lm1b h100 embrace/fifo", H100, "lstm-lm1b", "embrace", "fifo", {}),
    ("lstm-lm1b h100 embrace/embrace-2d", H100, "lstm-lm1b", "embrace", "embrace-2d", {}),
    ("lstm-lm1b h100 allreduce/fifo", H100, "lstm-lm1b", "allreduce", "fifo", {}),
    ("lstm-lm1b h100 allreduce/priority", H100, "lstm-lm1b", "allreduce", "priority", {}),
    ("lstm-lm1b h100 fsdp/fifo", H100, "lstm-lm1b", "fsdp", "fifo", {}),
    ("bert-base h100 fsdp/fifo", H100, "bert-base", "fsdp", "fifo", {}),
    ("bert-base h100 fsdp/fifo, interference 0", H100, "bert-base", "fsdp", "fifo", {"interference": 0.0}),
    ("bert-base h100 allreduce/fifo", H100, "bert-base", "allreduce", "fifo", {}),
    ("transformer-wmt h100 fsdp/fifo", H100, "transformer-wmt", "fsdp", "fifo", {}),
    ("gnmt rtx allreduce/fifo", RTX, "gnmt", "allreduce", "fifo", {}),
    ("transformer-wmt rtx allreduce/fifo", RTX, "transformer-wmt", "allreduce", "fifo", {}),
    ("lstm-lm1b 1024 h100 fsdp/fifo", H100_1024, "lstm-lm1b", "fsdp", "fifo", {}),
    ("lstm-lm1b 1024 h100 embrace/fifo", H100_1024, "lstm-lm1b", "embrace", "fifo", {}),
)
# the AlltoAll of the looked-up vectors whose wait the gnmt prose explains, at both credits
LOOKUP = ("gnmt rtx embrace/embrace-2d", "gnmt rtx embrace/embrace-2d, 32 MB credit")
LOOKUP_OP = "embrace-fwd:source_embedding"
# AllReduce sizes the block-size discussion quotes (bytes), and the share of the largest
# size's bus bandwidth a block would need to reach
NCCL_SIZES = (4 << 20, 32 << 20, 8 << 30)
BLOCK_SHARE = 0.8


def cfg(topology, model, strategy, scheduler, **kw):
    return SimulationConfig(topology=topology, model=model, strategy=strategy, scheduler=scheduler,
                            iterations=ITERATIONS, efficiency_baseline=False, **kw)


def breakdown(r) -> dict:
    """Step, exposed, compute; each collective's time and bytes per GPU; the slowest GPU
    class's compute per role (fwd, bwd, bwd-input, update, extra) and per DDP pass in the
    last measured iteration."""
    k = ITERATIONS - 2
    slow = max(r.run.classes, key=lambda c: c.slowdown).name
    ops = [c for c in r.run.compute if c.iteration == k and c.cls == slow]
    kinds: Counter = Counter()
    for c in ops:
        kinds[c.kind] += (c.end - c.start) * 1e3
    return {"step_ms": r.step_time * 1e3, "exposed_ms": r.exposed_comm * 1e3, "compute_ms": r.compute * 1e3,
            "slowest_factor": max(c.slowdown for c in r.run.classes),
            "comm_ms": {op: t * 1e3 for op, t in sorted(r.comm_time.items())},
            "algos": sorted({f"{c.op} {c.algo} {c.proto}" for c in r.run.comm if c.iteration == k}),
            "comm_mb": {op: b / 1e6 for op, b in sorted(r.comm_bytes_per_gpu.items())},
            "compute_by_kind_ms": dict(sorted(kinds.items())),
            "extra_ms": {c.name: (c.end - c.start) * 1e3 for c in ops if c.kind == "extra"}}


def blocks(r, tensor: str | None) -> dict:
    """How one tensor's gradient went in the measured iteration: blocks, sizes, span
    (tensor None: the iteration's largest collective, e.g. DDP's bucket of the table)."""
    cs = [c for c in r.run.comm if c.iteration == 1]
    cs = [c for c in cs if tensor in c.name] if tensor else [max(cs, key=lambda c: c.nbytes)]
    return {"blocks": len(cs), "mb": sum(c.nbytes for c in cs) / 1e6, "largest_mb": max(c.nbytes for c in cs) / 1e6,
            "span_ms": (max(c.end for c in cs) - min(c.start for c in cs)) * 1e3}


def lookup_wait(r, name: str) -> dict:
    """Iteration 2's `name` collective: how long it waited after it was ready, and what was
    in flight when it became ready."""
    c = next(c for c in r.run.comm if c.iteration == 2 and c.name == name)
    ahead = [o for o in r.run.comm if o is not c and o.start <= c.ready < o.end]
    return {"wait_ms": (c.start - c.ready) * 1e3, "mb": c.nbytes / 1e6,
            "in_flight": [{"name": o.name, "iteration": o.iteration, "mb": o.nbytes / 1e6} for o in ahead]}


def allreduce_curve(topology: str) -> dict:
    model = CollectiveModel(load_topology(topology))
    sizes = nt.sweep_sizes(1 << 20, NCCL_SIZES[-1], 2)
    rows = {r["size"]: r for r in nt.rows_json(nt.run(model, "all_reduce", sizes))}
    top = rows[NCCL_SIZES[-1]]["busbw"]
    block = min(s for s, r in rows.items() if r["busbw"] >= BLOCK_SHARE * top)
    return {"busbw": {str(s): {k: rows[s][k] for k in ("busbw", "algo", "proto")} for s in NCCL_SIZES},
            "algos": sorted({(r["algo"], r["proto"], s) for s, r in rows.items()}, key=lambda x: x[2]),
            "block_at_share": block}


def head_heavy() -> dict:
    """tests/schedulers' VGG-shaped model at 25 Gb/s (its own YAML and hardware, read from
    the test so the two cannot drift)."""
    spec = importlib.util.spec_from_file_location("test_schedulers", "tests/schedulers/test_schedulers.py")
    ts = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ts)
    path = Path(tempfile.mkdtemp()) / "head-heavy.yaml"
    path.write_text(ts.HEAD_HEAVY)

    def step(**kw) -> float:
        return simulate(SimulationConfig(topology="2x8", model=str(path), hardware=ts.SLOW_NET, iterations=3,
                                         efficiency_baseline=False, **kw)).step_time * 1e3
    off = {"reorder": "off"}
    return {"allreduce/fifo": step(), "allreduce/priority": step(scheduler="priority"),
            "embrace/fifo": step(strategy="embrace"),
            "embrace/embrace-2d": step(strategy="embrace", scheduler="embrace-2d"),
            "embrace-2d, reorder off": step(strategy="embrace", scheduler="embrace-2d", scheduler_options=off),
            "embrace-2d, reorder off, 4 MB blocks, 16 MB credit":
                step(strategy="embrace", scheduler="embrace-2d",
                     scheduler_options={**off, "partition_bytes": 4e6, "credit_bytes": 16e6}),
            "embrace-2d, reorder off, 0.5 MB blocks, 2 MB credit":
                step(strategy="embrace", scheduler="embrace-2d",
                     scheduler_options={**off, "partition_bytes": 5e5, "credit_bytes": 2e6})}


def model_sizes(name: str) -> dict:
    """Parameters (millions): all, in embedding layers, the rest; and per FSDP unit."""
    m = load_model(name)
    layers = [layer for layer in m.layers if layer.params > 0]
    emb = sum(layer.params for layer in layers if layer.kind == "embedding")
    return {"params_m": sum(layer.params for layer in layers) / 1e6, "embedding_m": emb / 1e6,
            "tables": [[t.name, t.vocab, t.dim] for t in m.tables],
            "fsdp_units_m": {u: sum(layer.params for layer in ls) / 1e6 for u, ls in units(m)},
            "fsdp_root_layers": [layer.name for layer in units(m)[0][1]]}


def main() -> None:
    out: dict = {"models": {m: model_sizes(m) for m in ("lstm-lm1b", "gnmt")}, "runs": {}, "blocks": {}, "lookup_wait": {}, "allreduce_curve": {}}
    for label, topology, model, strategy, scheduler, kw in RUNS:
        r = simulate(cfg(topology, model, strategy, scheduler, **kw))
        out["runs"][label] = breakdown(r)
        if label.startswith("lstm-lm1b h100 allreduce/"):
            out["blocks"][label] = blocks(r, "word_embedding" if label.endswith("priority") else None)
        if label in LOOKUP:
            out["lookup_wait"][label] = lookup_wait(r, LOOKUP_OP)
    for topology in (RTX, H100):
        out["allreduce_curve"][topology] = allreduce_curve(topology)
    out["head_heavy_25gbps"] = head_heavy()
    atomic_write_text("docs/results/checks.json", json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()

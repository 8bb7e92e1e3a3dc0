"""The mechanisms, measured: EmbRace 2D ablations, S2 Reducer's bytes, parameter servers
against EmbRace, and the Chrome-trace evidence that 2D's embedding traffic overlaps the
next forward. Writes docs/results/mechanisms.json, a Chrome trace, and the block between
<!-- mechanisms:start --> and <!-- mechanisms:end --> in docs/results.md. Run from the
repository root:

    .venv/bin/python benchmarks/results_mechanisms.py
"""

from __future__ import annotations

import json
from pathlib import Path

from docblock import replace_marked_block

from embsim.ablation import ablation
from embsim.atomic import atomic_write_text
from embsim.engine.run import SimulationConfig, simulate
from embsim.report.chrome_trace import write_chrome_trace

CLUSTERS = ("pcie-rtx3090:4x4", "dgx-h100:16x8")
MODELS = ("lstm-lm1b", "gnmt")
ITERATIONS = 4
START, END = "<!-- mechanisms:start -->", "<!-- mechanisms:end -->"
TRACE = "docs/results/embrace-2d{}_lstm-lm1b_pcie-rtx3090.trace.json"
# A credit of one default block (32 MB instead of 64): the credit binds, so the queue, not
# arrival, decides which block goes next whenever a 32 MB block is in flight.
CREDIT32 = 8_000_000 * 4
CREDIT32_OPTIONS = {"priority.credit_bytes": CREDIT32, "embrace-2d.credit_bytes": CREDIT32}
OVERLAP_RUNS = (("fifo", "fifo", {}), ("embrace-2d", "embrace-2d", {}),
                ("embrace-2d, reorder off", "embrace-2d", {"reorder": "off"}),
                ("embrace-2d, 32 MB credit", "embrace-2d", {"credit_bytes": CREDIT32}),
                ("embrace-2d, reorder off, 32 MB credit", "embrace-2d",
                 {"reorder": "off", "credit_bytes": CREDIT32}))
TRACED = {"embrace-2d": "", "embrace-2d, reorder off": "_reorder-off",
          "embrace-2d, reorder off, 32 MB credit": "_reorder-off_credit32"}


def cfg(topology, model, **kw):
    return SimulationConfig(topology=topology, model=model, iterations=ITERATIONS,
                            efficiency_baseline=False, **kw)


def _carried(c, lo: float, hi: float) -> float:
    """Bytes of comm record c carried inside [lo, hi] (evenly over its duration)."""
    return c.nbytes * max(0.0, min(c.end, hi) - max(c.start, lo)) / max(c.end - c.start, 1e-15)


def overlap_with_next_forward(run, k: int) -> dict:
    """Where iteration k's embedding gradient traffic (gradients, deferred blocks; not
    the lookups' forward AlltoAll or the ids) was carried: while iteration k's backward
    computed, while iteration k+1's forward computed, or neither."""
    cls = run.classes[0].name
    ops = [c for c in run.compute if c.cls == cls]
    fwd = [c for c in ops if c.iteration == k + 1 and c.kind == "fwd"]
    bwd = [c for c in ops if c.iteration == k and c.kind in ("bwd", "bwd-input")]
    f_lo, f_hi = min(c.start for c in fwd), max(c.end for c in fwd)
    b_lo, b_hi = min(c.start for c in bwd), max(c.end for c in bwd)
    grads = [c for c in run.comm if c.iteration == k and c.category == "embedding"
             and not c.name.startswith(("embrace-fwd:", "embrace-ids:", "ps-pull:"))]
    total = sum(c.nbytes for c in grads)
    during_fwd = sum(_carried(c, f_lo, f_hi) for c in grads)
    during_bwd = sum(_carried(c, b_lo, b_hi) for c in grads)
    deferred = [c for c in grads if "#deferred" in c.name]
    return {"embedding_gradient_mb": total / 1e6, "during_next_forward_mb": during_fwd / 1e6,
            "during_backward_mb": during_bwd / 1e6,
            "deferred_blocks": len(deferred),
            "deferred_started_during_next_forward": sum(1 for c in deferred if f_lo <= c.start < f_hi)}


def s2_bytes(topology, model) -> dict:
    """Bytes per GPU (busbw convention) of the embedding gradient alone, and in total."""
    out = {}
    for strategy in ("allreduce", "allgather", "s2reducer"):
        r = simulate(cfg(topology, model, strategy=strategy))
        emb = sum(c.nbytes for c in r.run.comm if c.iteration == 1 and c.category == "embedding")
        out[strategy] = {"total_mb": sum(r.comm_bytes_per_gpu.values()) / 1e6, "step_ms": r.step_time * 1e3,
                         "notes": [n for n in r.notes if n.startswith("s2reducer")]}
        n = r.n_gpus
        if strategy == "allgather":
            out[strategy]["embedding_mb"] = emb * (n - 1) / n / 1e6
        elif strategy == "s2reducer":
            out[strategy]["embedding_mb"] = emb * 2 * (n - 1) / n / 1e6
    dense = simulate(cfg(topology, model, strategy="allgather"))
    out["allreduce"]["embedding_mb"] = (out["allreduce"]["total_mb"]
                                        - (dense.comm_bytes_per_gpu.get("all_reduce", 0.0)) / 1e6)
    out["reduction_vs_allgather"] = 1 - out["s2reducer"]["embedding_mb"] / out["allgather"]["embedding_mb"]
    out["reduction_vs_allreduce"] = 1 - out["s2reducer"]["embedding_mb"] / out["allreduce"]["embedding_mb"]
    return out


def ps_vs_embrace(topology, model) -> dict:
    out = {}
    for label, strategy, opts in (("ps colocated", "ps", {"servers": "colocated"}),
                                  ("ps dedicated", "ps", {"servers": "dedicated"}),
                                  ("ps dedicated, rows hashed", "ps",
                                   {"servers": "dedicated", "server_sharding": "hashed"}),
                                  ("ps dedicated, contiguous rows", "ps",
                                   {"servers": "dedicated", "server_sharding": "contiguous"}),
                                  ("embrace", "embrace", {}), ("embrace/embrace-2d", "embrace", {})):
        sched = "embrace-2d" if label.endswith("embrace-2d") else "fifo"
        r = simulate(cfg(topology, model, strategy=strategy, scheduler=sched, strategy_options=opts))
        load = next((n.split("max/mean ")[1].split()[0] for n in r.notes if "max/mean" in n), None)
        busy = r.busiest_link
        out[label] = {"step_ms": r.step_time * 1e3, "exposed_ms": r.exposed_comm * 1e3,
                      "server_load_max_over_mean": None if load is None else float(load),
                      "busiest_link": None if busy is None else [busy[0], busy[1], busy[2]]}
    return out


def render(data: dict) -> str:
    by_source: dict[str, list[str]] = {}
    for key, source in data["compute_source"].items():
        by_source.setdefault(source, []).append(key)
    lines = ["Compute times in every table below:", ""]
    lines += [f"- {'; '.join(keys)}: `{source}`" for source, keys in by_source.items()]
    lines.append("")
    for key, d in data["ablation"].items():
        rows = d["rows"]
        lines += [f"#### 2D ablation: embrace, {key}", "",
                  "| run | step (ms) | exposed comm (ms) | vs embrace-2d (ms) | vs fifo (ms) |",
                  "|---|---|---|---|---|"]
        lines += [f"| {r['run']} | {r['step_time_ms']:.2f} | {r['exposed_comm_ms']:.2f} | "
                  f"{r['vs_full_2d_ms']:+.2f} | {r['vs_fifo_ms']:+.2f} |" for r in rows]
        lines += ["", "Where one iteration's embedding gradient traffic was carried (MB):", "",
                  "| run | total | during its backward | during the next forward | deferred blocks started during the next forward |",
                  "|---|---|---|---|---|"]
        for label, ov in data["overlap"][key].items():
            lines.append(f"| {label} | {ov['embedding_gradient_mb']:.1f} | {ov['during_backward_mb']:.1f} | "
                         f"{ov['during_next_forward_mb']:.1f} | {ov['deferred_started_during_next_forward']} "
                         f"of {ov['deferred_blocks']} |")
        lines.append("")
        lines += [f"- slower than fifo: {b}" for b in d["bottlenecks"]] + [""]
    keys = list(data["ablation_credit32"])
    lines += ["#### 2D ablation with a 32 MB credit (one default block; priority and embrace-2d)", "",
              "step (ms); in brackets the difference from fifo", "",
              "| run | " + " | ".join(keys) + " |", "|---|" + "---|" * len(keys)]
    labels = [r["run"] for r in data["ablation_credit32"][keys[0]]["rows"]]
    for i, label in enumerate(labels):
        cells = [data["ablation_credit32"][k]["rows"][i] for k in keys]
        lines.append(f"| {label} | " + " | ".join(f"{c['step_time_ms']:.2f} ({c['vs_fifo_ms']:+.2f})"
                                                   for c in cells) + " |")
    lines.append("")
    for k in keys:
        lines += [f"- slower than fifo ({k}): {b}" for b in data["ablation_credit32"][k]["bottlenecks"]]
    lines.append("")
    lines += ["#### S2 Reducer: embedding-gradient bytes per GPU per step (busbw convention)", "",
              "| model, cluster | allreduce (dense table) MB | allgather MB | s2reducer MB | less than allgather "
              "| less than allreduce | step s2reducer / allgather / allreduce (ms) | other elements in each decoded value |",
              "|---|---|---|---|---|---|---|---|"]
    for key, d in data["s2reducer"].items():
        note = d["s2reducer"]["notes"][0] if d["s2reducer"]["notes"] else ""
        colliders = note.split("carries ")[1].split(" other")[0] if "carries " in note else "?"
        lines.append(f"| {key} | {d['allreduce']['embedding_mb']:.1f} | {d['allgather']['embedding_mb']:.1f} | "
                     f"{d['s2reducer']['embedding_mb']:.2f} | {d['reduction_vs_allgather'] * 100:.1f} % | "
                     f"{d['reduction_vs_allreduce'] * 100:.1f} % | {d['s2reducer']['step_ms']:.1f} / "
                     f"{d['allgather']['step_ms']:.1f} / {d['allreduce']['step_ms']:.1f} | {colliders} |")
    lines += ["", "#### Parameter servers against EmbRace (fifo unless named; ps rows in BytePS's "
              "partitions unless named)", "",
              "| model, cluster | run | step (ms) | exposed comm (ms) | server load max/mean | busiest link |",
              "|---|---|---|---|---|---|"]
    for key, d in data["ps"].items():
        for label, r in d.items():
            load = "" if r["server_load_max_over_mean"] is None else f"{r['server_load_max_over_mean']:.2f}"
            busy = "" if r["busiest_link"] is None else f"{r['busiest_link'][0]} {r['busiest_link'][1] * 100:.0f} %"
            lines.append(f"| {key} | {label} | {r['step_ms']:.2f} | {r['exposed_ms']:.2f} | {load} | {busy} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    data = {"ablation": {}, "ablation_credit32": {}, "overlap": {}, "s2reducer": {}, "ps": {},
            "compute_source": {}}
    for topology in CLUSTERS:
        for model in MODELS:
            key = f"{model}, {topology}"
            data["ablation"][key] = ablation(cfg(topology, model), "embrace").as_json()
            data["ablation_credit32"][key] = ablation(cfg(topology, model), "embrace", CREDIT32_OPTIONS).as_json()
            data["overlap"][key] = {}
            for label, sched, opts in OVERLAP_RUNS:
                r = simulate(cfg(topology, model, strategy="embrace", scheduler=sched, scheduler_options=opts))
                data["compute_source"][key] = r.compute_source
                data["overlap"][key][label] = overlap_with_next_forward(r.run, ITERATIONS - 2)
                if label in TRACED and topology == CLUSTERS[0] and model == MODELS[0]:
                    write_chrome_trace(TRACE.format(TRACED[label]), r.run, r.n_gpus, r.cluster.gpus_per_node)
            data["s2reducer"][key] = s2_bytes(topology, model)
            data["ps"][key] = ps_vs_embrace(topology, model)
    atomic_write_text("docs/results/mechanisms.json", json.dumps(data, indent=2) + "\n")
    replace_marked_block(Path("docs/results.md"), START, END, render(data))


if __name__ == "__main__":
    main()

"""The derived figures docs/results.md's prose quotes (ratios, counts, ranges), computed
from the JSON that results_matrix.sh and results_mechanisms.py wrote, so that re-reading
the prose after a regeneration is a diff of this script's output, not arithmetic by hand.
Run from the repository root after those two:

    .venv/bin/python benchmarks/results_figures.py
"""

from __future__ import annotations

import json
from pathlib import Path

MODELS = ("lstm-lm1b", "gnmt", "transformer-wmt", "bert-base")
CLUSTERS = ("pcie-rtx3090", "dgx-h100")
SPARSE_CELLS = [(m, c) for c in CLUSTERS for m in ("lstm-lm1b", "gnmt")]


def load(model: str, cluster: str) -> dict[str, dict]:
    data = json.loads(Path(f"docs/results/{model}_{cluster}.json").read_text())
    return {f"{r['strategy']}/{r['scheduler']}": r for r in data["rows"] if not r.get("refused")}


def step(rows: dict, label: str) -> float:
    return rows[label]["step_time_ms"]


def compute(rows: dict, label: str) -> float:
    """The step minus its exposed communication: what the stream computed (stretched by
    interference while collectives ran)."""
    return rows[label]["step_time_ms"] - rows[label]["exposed_comm_ms"]


def main() -> None:
    cells = {(m, c): load(m, c) for c in CLUSTERS for m in MODELS}
    print("== ranking per cell (best three, fsdp/fifo, baseline)")
    for (m, c), rows in cells.items():
        ranked = sorted(rows, key=lambda k: step(rows, k))
        best = ", ".join(f"{k} {step(rows, k):.2f}" for k in ranked[:3])
        fsdp = f"fsdp/fifo {step(rows, 'fsdp/fifo'):.2f} (rank {ranked.index('fsdp/fifo') + 1})" \
            if "fsdp/fifo" in rows else "fsdp refused"
        print(f"{m} / {c}: {best}; {fsdp}; allreduce/fifo {step(rows, 'allreduce/fifo'):.2f}")

    print("\n== priority vs fifo, per strategy and cell")
    pairs = []
    for (m, c), rows in cells.items():
        for label in rows:
            strategy, scheduler = label.split("/")
            if scheduler == "priority" and f"{strategy}/fifo" in rows:
                f, p = rows[f"{strategy}/fifo"], rows[label]
                pairs.append(dict(cell=f"{m} / {c}", strategy=strategy,
                                  rel=p["step_time_ms"] / f["step_time_ms"] - 1,
                                  d_step=p["step_time_ms"] - f["step_time_ms"],
                                  d_exposed=p["exposed_comm_ms"] - f["exposed_comm_ms"],
                                  d_compute=compute(rows, label) - compute(rows, f"{strategy}/fifo")))
    slower = [p for p in pairs if p["d_step"] > 0]
    faster = [p for p in pairs if p["d_step"] < 0]
    print(f"{len(pairs)} pairs; priority slower in {len(slower)}, faster in {len(faster)}; "
          f"relative step {min(p['rel'] for p in pairs) * 100:+.1f} % .. {max(p['rel'] for p in pairs) * 100:+.1f} %")
    worst = max(pairs, key=lambda p: p["rel"])
    print(f"worst: {worst['strategy']} on {worst['cell']} {worst['rel'] * 100:+.1f} %, "
          f"exposed {worst['d_exposed']:+.2f} ms")
    less_exposed = [p for p in faster if p["d_exposed"] < 0]
    print(f"of the {len(faster)} wins, {len(less_exposed)} with less exposed communication "
          f"({min((-p['d_exposed'] for p in less_exposed), default=0):.2f}.."
          f"{max((-p['d_exposed'] for p in less_exposed), default=0):.2f} ms less); the others:")
    for p in faster:
        if p["d_exposed"] >= 0:
            print(f"   {p['strategy']} on {p['cell']}: step {p['d_step']:+.2f}, exposed {p['d_exposed']:+.2f}")
    lower = [p for p in pairs if p["d_compute"] < 0]
    print(f"compute reading lower under priority in {len(lower)} of {len(pairs)} pairs, by "
          f"{min(-p['d_compute'] for p in lower):.2f}..{max(-p['d_compute'] for p in lower):.2f} ms"
          if lower else "compute reading never lower under priority")
    for p in pairs:
        if p["d_compute"] >= 0:
            print(f"   compute not lower: {p['strategy']} on {p['cell']} ({p['d_compute']:+.2f} ms)")

    print("\n== sparse cells: embrace-2d, S2 Reducer, PS, dense baselines")
    for m, c in SPARSE_CELLS:
        r = cells[(m, c)]
        e2d = step(r, "embrace/embrace-2d")
        print(f"{m} / {c}: embrace-2d over embrace/fifo {(1 - e2d / step(r, 'embrace/fifo')) * 100:.1f} %; "
              f"embrace-2d speedup over ps {step(r, 'ps/fifo') / e2d:.2f}x, allgather "
              f"{step(r, 'allgather/fifo') / e2d:.2f}x, s2reducer {step(r, 's2reducer/fifo') / e2d:.2f}x, "
              f"DDP {step(r, 'allreduce/fifo') / e2d:.2f}x; s2reducer over allgather "
              f"{step(r, 'allgather/fifo') / step(r, 's2reducer/fifo'):.2f}x")
    for m in ("transformer-wmt", "bert-base"):
        for c in CLUSTERS:
            r = cells[(m, c)]
            print(f"{m} / {c}: embrace-2d {step(r, 'embrace/fifo') / step(r, 'embrace/embrace-2d'):.3f}x "
                  f"over fifo; fsdp/fifo {step(r, 'fsdp/fifo'):.2f} vs DDP {step(r, 'allreduce/fifo'):.2f}")

    mech = json.loads(Path("docs/results/mechanisms.json").read_text())
    print("\n== 2D ablation (64 MB credit, then 32 MB): each part's worth, ms (run without it - full)")
    for key in mech["ablation"]:
        for which in ("ablation", "ablation_credit32"):
            rows = {r["run"]: r for r in mech[which][key]["rows"]}
            full = rows["embrace-2d"]["step_time_ms"]
            fifo = rows["fifo"]["step_time_ms"]
            parts = {k.split(", ")[1].split(" off")[0]: v["step_time_ms"] - full
                     for k, v in rows.items() if k.endswith(" off")}
            print(f"{key} [{which}]: 2D {full:.2f}, over fifo {(1 - full / fifo) * 100:.1f} %; "
                  + ", ".join(f"{k} {v:+.2f}" for k, v in parts.items()))
        c64 = {r["run"]: r for r in mech["ablation"][key]["rows"]}["embrace-2d"]["step_time_ms"]
        c32 = {r["run"]: r for r in mech["ablation_credit32"][key]["rows"]}["embrace-2d"]["step_time_ms"]
        print(f"   32 MB credit minus 64 MB credit: {c32 - c64:+.2f} ms")
    print("\n== parameter servers")
    for key, d in mech["ps"].items():
        e2d = d["embrace/embrace-2d"]["step_ms"]
        col, ded = d["ps colocated"]["step_ms"], d["ps dedicated"]["step_ms"]
        print(f"{key}: hashed/2D {d['ps dedicated, rows hashed']['step_ms'] / e2d:.2f}x; "
              f"dedicated vs colocated {(ded / col - 1) * 100:+.1f} %; ps steps "
              f"{min(v['step_ms'] for k, v in d.items() if k.startswith('ps')):.2f}.."
              f"{max(v['step_ms'] for k, v in d.items() if k.startswith('ps')):.2f}, embrace/fifo "
              f"{d['embrace']['step_ms']:.2f}")


if __name__ == "__main__":
    main()

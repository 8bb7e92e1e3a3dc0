"""The derived figures docs/results.md's prose quotes (ratios, counts, ranges), computed
from the JSON that results_matrix.sh and results_mechanisms.py wrote, so that re-reading
the prose after a regeneration is a diff of this script's output, not arithmetic by hand.
Run from the repository root after results_matrix.sh, results_mechanisms.py,
results_scaling.py and results_checks.py:

    .venv/bin/python benchmarks/results_figures.py
"""

from __future__ import annotations

import json
from pathlib import Path

from embsim.compare import TRAINING_MEAN_ERROR

MODELS = ("lstm-lm1b", "gnmt", "transformer-wmt", "bert-base")
CLUSTERS = ("pcie-rtx3090", "dgx-h100")
SPARSE_CELLS = [(m, c) for c in CLUSTERS for m in ("lstm-lm1b", "gnmt")]
# A step-time gap smaller than this fraction is not resolved by the model: the mean
# |simulated/measured - 1| of docs/validation.md's published training throughput, the rule
# `embsim compare` prints (its test recomputes the constant from the validation)
RESOLUTION = TRAINING_MEAN_ERROR
SCALING_GPUS = (8, 64, 128, 512, 1024)
TRACE = "docs/results/embrace-2d{}_lstm-lm1b_pcie-rtx3090.trace.json"


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
        top = step(rows, ranked[0])
        near = [k for k in ranked[1:] if step(rows, k) < top * (1 + RESOLUTION)]
        gap = (step(rows, ranked[1]) / top - 1) * 100
        comp = [compute(rows, k) for k in rows]
        print(f"   first ahead of second by {gap:.1f} %; within {RESOLUTION * 100:.1f} % of the first: "
              f"{len(near)} of {len(ranked) - 1} others; compute reading (step - exposed) "
              f"{min(comp):.1f}..{max(comp):.1f} ms; steps {top:.1f}..{step(rows, ranked[-1]):.1f} ms")

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
        print(f"   fsdp/fifo over embrace-2d {step(r, 'fsdp/fifo') / e2d:.2f}x; s2reducer fifo {step(r, 's2reducer/fifo'):.2f}, "
              f"priority {step(r, 's2reducer/priority'):.2f} vs embrace fifo {step(r, 'embrace/fifo'):.2f}, "
              f"priority {step(r, 'embrace/priority'):.2f}, embrace-2d {e2d:.2f}; "
              f"sparse speedups over DDP {min(step(r, 'allreduce/fifo') / step(r, k) for k in r if k.split('/')[0] in ('embrace', 'allgather', 'ps', 's2reducer')):.2f}.."
              f"{max(step(r, 'allreduce/fifo') / step(r, k) for k in r):.2f}x")
    for m in ("transformer-wmt", "bert-base"):
        for c in CLUSTERS:
            r = cells[(m, c)]
            # embrace-2d refuses these dense-table models (2026-12-05): no row to compare
            e2d = (f"embrace-2d {step(r, 'embrace/fifo') / step(r, 'embrace/embrace-2d'):.3f}x over fifo"
                   if "embrace/embrace-2d" in r else "embrace-2d refused (every table's gradient is dense)")
            print(f"{m} / {c}: {e2d}; fsdp/fifo {step(r, 'fsdp/fifo'):.2f} vs DDP {step(r, 'allreduce/fifo'):.2f} "
                  f"({(step(r, 'fsdp/fifo') / step(r, 'allreduce/fifo') - 1) * 100:+.1f} %)")

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
              f"{d['embrace']['step_ms']:.2f} (ps steps differ from it by up to {max(abs(v['step_ms'] / d['embrace']['step_ms'] - 1) for k, v in d.items() if k.startswith('ps')) * 100:.1f} % of it)")
    print("\n== S2 Reducer: rows of the table the GPUs' union touches (from the s2reducer note)")
    for key, d in mech["s2reducer"].items():
        note = d["s2reducer"]["notes"][0]
        nonzero = float(note.split(" nonzero elements")[0].split("; ")[-1].replace(",", ""))
        dense_mb = float(note.split("dense gradient ")[1].split(" MB")[0])
        print(f"{key}: union {nonzero / (dense_mb * 1e6 / 4) * 100:.1f} % of the table's elements")
    scaling()
    checks()
    traces()


def scaling() -> None:
    print("\n== scaling (dgx-h100 nodes), step ms at " + " / ".join(map(str, SCALING_GPUS)) + " GPUs")
    for model in ("lstm-lm1b", "gnmt"):
        data = json.loads(Path(f"docs/results/scaling_{model}.json").read_text())
        series = {k: dict(v) for k, v in data.items() if k != "compute_source"}
        ddp = series["allreduce/fifo"]
        for label, s in series.items():
            below = [g for g in s if s[g] < ddp[g]]
            print(f"{model} {label}: " + " / ".join(f"{s[g]:.1f}" for g in SCALING_GPUS)
                  + f"; 8->1024 {(s[1024] / s[8] - 1) * 100:+.0f} %"
                  + ("" if label == "allreduce/fifo" else
                     f"; below DDP at {','.join(map(str, below)) or 'no count'}"))
        e2d = series["embrace/embrace-2d"]
        print(f"{model} DDP over embrace-2d: " + ", ".join(f"{g} {(ddp[g] / e2d[g] - 1) * 100:+.1f} %" for g in sorted(ddp)))
        gpus = sorted(ddp)
        print(f"{model} fastest per count: " + ", ".join(
            f"{g} {min(series, key=lambda k: series[k][g])}" for g in gpus))


def checks() -> None:
    d = json.loads(Path("docs/results/checks.json").read_text())
    print("\n== checks (results_checks.py): step / exposed / compute ms; collectives ms; compute by role on the slowest GPU")
    for label, r in d["runs"].items():
        comm = ", ".join(f"{k} {v:.2f}" for k, v in r["comm_ms"].items())
        kinds = ", ".join(f"{k} {v:.2f}" for k, v in r["compute_by_kind_ms"].items())
        print(f"{label}: {r['step_ms']:.2f} / {r['exposed_ms']:.2f} / {r['compute_ms']:.2f}; {comm}; {kinds}"
              f"; slowest GPU x{r['slowest_factor']:.3f}; {', '.join(r['algos'])}")
    runs = d["runs"]
    for name, m in d["models"].items():
        print(f"{name}: {m['params_m']:.1f} M parameters, {m['params_m'] - m['embedding_m']:.1f} M outside embedding "
              f"layers, tables {m['tables']}; fsdp root unit {m['fsdp_units_m']['root']:.1f} M "
              f"({', '.join(m['fsdp_root_layers'])}), {len(m['fsdp_units_m']) - 1} block units")

    def stretch(base):   # compute the interference adds: compute with it minus without
        return runs[base]["compute_ms"] - runs[f"{base}, interference 0"]["compute_ms"]
    for base in ("gnmt rtx embrace/embrace-2d", "gnmt rtx allgather/embrace-2d", "gnmt h100 fsdp/fifo",
                 "gnmt h100 allreduce/fifo", "bert-base h100 fsdp/fifo"):
        print(f"   interference stretch of {base}: {stretch(base):.2f} ms")
    lstm = "lstm-lm1b rtx {}/fifo, interference 0"
    print(f"   lstm-lm1b rtx without interference: DDP compute minus fsdp's "
          f"{runs[lstm.format('allreduce')]['compute_ms'] - runs[lstm.format('fsdp')]['compute_ms']:.2f} ms")
    v = "lstm-lm1b rtx allreduce/{}, variation 0"
    print(f"   lstm-lm1b rtx allreduce, no variation: fifo compute minus priority's "
          f"{runs[v.format('fifo')]['compute_ms'] - runs[v.format('priority')]['compute_ms']:.2f} ms; DDP passes: "
          + ", ".join(f"{k.split(':', 1)[1]} {t:.2f}" for k, t in runs[v.format('fifo')]["extra_ms"].items()))
    for label, b in d["blocks"].items():
        print(f"   {label}: the table's gradient as {b['blocks']} block(s) of up to {b['largest_mb']:.1f} MB "
              f"({b['mb']:.0f} MB) over {b['span_ms']:.2f} ms")
    for label, w in d["lookup_wait"].items():
        print(f"   {label}: iteration 2's lookup AlltoAll ({w['mb']:.1f} MB) waits {w['wait_ms']:.2f} ms behind "
              + ", ".join(f"{o['name']} ({o['mb']:.1f} MB)" for o in w["in_flight"]))
    for topo, c in d["allreduce_curve"].items():
        top = c["busbw"][str(8 << 30)]["busbw"]
        sizes = ", ".join(f"{int(s) >> 20} MiB {v['busbw']:.1f} GB/s ({v['busbw'] / top * 100:.0f} %, {v['algo']} {v['proto']})"
                          for s, v in c["busbw"].items())
        switches = [f"{a} {p} from {s >> 20} MiB" for i, (a, p, s) in enumerate(c["algos"])
                    if i == 0 or (a, p) != tuple(c["algos"][i - 1][:2])]
        print(f"AllReduce on {topo}: {sizes}; 80 % of the 8 GiB bus bandwidth from {c['block_at_share'] >> 20} MiB; "
              + "; ".join(switches))
    print("head-heavy model at 25 Gb/s (tests/schedulers): " + ", ".join(f"{k} {v:.1f}" for k, v in d["head_heavy_25gbps"].items()))


def _events(stem: str) -> list[dict]:
    data = json.loads(Path(TRACE.format(stem)).read_text())
    return [e for e in data["traceEvents"] if e["ph"] == "X" and e["pid"] == 0]


def traces() -> None:
    """GPU 0's events the trace paragraph quotes (ms)."""
    print("\n== Chrome traces, GPU 0 (ms)")
    for stem in ("", "_reorder-off", "_reorder-off_credit32"):
        ev = _events(stem)

        def span(pred):
            e = next(e for e in ev if pred(e))
            return f"{e['ts'] / 1e3:.2f}-{(e['ts'] + e['dur']) / 1e3:.2f}"
        it = lambda e, k: e["args"].get("iteration") == k  # noqa: E731
        # the collective itself (a comm lane), not the compute thread's "wait:" event for it
        bwd1 = [e for e in ev if it(e, 1) and e["tid"] == 0 and e["name"].startswith(("bwd", "grad"))]
        emb1 = [e for e in ev if it(e, 1) and e["args"].get("tensor", "").startswith("embrace-bwd:")]
        fwd2 = min(e["ts"] for e in ev if it(e, 2) and e["tid"] == 0 and e["name"].startswith("fwd:")) / 1e3
        last_grad = max((e for e in ev if it(e, 1) and e["args"].get("tensor", "").startswith("grad:lstm.0")),
                        key=lambda e: e["ts"] + e["dur"])
        print(f"embrace-2d{stem or ', every part on'}: iteration 1's embrace-bwd AlltoAlls end "
              f"{max(e['ts'] + e['dur'] for e in emb1) / 1e3:.2f}, its backward ends "
              f"{max(e['ts'] + e['dur'] for e in bwd1) / 1e3:.2f}; deferred block "
              f"{span(lambda e: it(e, 1) and e['args'].get('tensor') == 'embrace-bwd:word_embedding#deferred')}; "
              f"iteration 2's first forward op starts {fwd2:.2f}, lookup AlltoAll "
              f"{span(lambda e: it(e, 2) and e['tid'] != 0 and e['args'].get('tensor') == 'embrace-fwd:word_embedding')}, "
              f"update:lstm.0 {span(lambda e: it(e, 2) and e['name'] == 'update:lstm.0')}, "
              f"fwd:lstm.0 {span(lambda e: it(e, 2) and e['name'] == 'fwd:lstm.0')}; last grad:lstm.0 block of "
              f"iteration 1 {last_grad['ts'] / 1e3:.2f}-{(last_grad['ts'] + last_grad['dur']) / 1e3:.2f}")


if __name__ == "__main__":
    main()

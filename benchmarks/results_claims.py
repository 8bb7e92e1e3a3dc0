"""The present-tense prose of docs/results.md that quotes figures, generated: the papers'
claims table (<!-- claims:start/end -->), the per-model paragraphs of "Where the simulated
speedups land" (<!-- landing:start/end -->), distopt's figures (<!-- distopt:start/end -->),
the scaling paragraph (<!-- scaling-prose:start/end -->) and the resolution paragraph
(<!-- trust:start/end -->). Every step time, ratio, range, order, "first"/"last" and "N of
M within the resolution" is computed here from what the other scripts committed:

- docs/results/<model>_<cluster>.json (benchmarks/results_matrix.sh),
- docs/results/mechanisms.json (results_mechanisms.py), docs/results/checks.json
  (results_checks.py), docs/results/scaling_<model>.json (results_scaling.py),
- docs/validation.md's generated headlines (`python -m embsim.validate.docs`),
- and a few runs of its own, which take seconds: the NIC what-ifs behind the S2 Reducer
  "1.8x" and EmbRace "30.66x" rows (`--hardware nic_gbit` as `embsim simulate` takes it),
  ps without local aggregation (its server skew), and priority/fifo without interference.

The words that judge (reproduced, contradicted, "level", "the big part") rest on
conditions checked here: where the data no longer support a word, the script stops with
the condition that failed instead of printing a claim the tables contradict, and the
sentence has to be rewritten here. Run from the repository root after the other results
scripts:

    .venv/bin/python benchmarks/results_claims.py           # rewrite the blocks
    .venv/bin/python benchmarks/results_claims.py --check   # exit 1 if the page differs
"""

from __future__ import annotations

import json
import re
import sys
from functools import lru_cache
from pathlib import Path

from docblock import replace_marked_block

from embsim.compare import TRAINING_MEAN_ERROR
from embsim.engine.run import SimulationConfig, simulate

PAGE = Path("docs/results.md")
MODELS = ("lstm-lm1b", "gnmt", "transformer-wmt", "bert-base")
CLUSTERS = ("pcie-rtx3090", "dgx-h100")
TOPOLOGY = {"pcie-rtx3090": "pcie-rtx3090:4x4", "dgx-h100": "dgx-h100:16x8"}
CLUSTER_WORDS = {"pcie-rtx3090": "RTX 3090s", "dgx-h100": "H100s"}
RESOLUTION = TRAINING_MEAN_ERROR
RES = f"{RESOLUTION * 100:.1f} %"
NIC_GBITS = (25, 10, 1)          # the what-ifs; 100 Gb/s is the preset, the matrices' own rows
ITERATIONS = 3                   # as results_matrix.sh
SCALING_GPUS = (8, 64, 128, 512, 1024)


class ClaimChanged(RuntimeError):
    """A judging word the page prints no longer holds for the data: rewrite the sentence."""


def need(cond: bool, what: str) -> None:
    if not cond:
        raise ClaimChanged(f"docs/results.md's wording assumes {what}; the data no longer say so: "
                           "rewrite the sentence in benchmarks/results_claims.py")


# ---- data ---------------------------------------------------------------------------

@lru_cache(None)
def cell(model: str, cluster: str) -> "Cell":
    return Cell(model, cluster)


class Cell:
    def __init__(self, model: str, cluster: str):
        data = json.loads(Path(f"docs/results/{model}_{cluster}.json").read_text())
        self.model, self.cluster = model, cluster
        self.all = {f"{r['strategy']}/{r['scheduler']}": r for r in data["rows"]}
        self.rows = {k: r for k, r in self.all.items() if not r.get("refused")}
        self.ranked = sorted(self.rows, key=self.step)

    def step(self, label: str) -> float:
        return self.rows[label]["step_time_ms"]

    def exposed(self, label: str) -> float:
        return self.rows[label]["exposed_comm_ms"]

    def compute(self, label: str) -> float:
        """Step minus exposed communication (interference stretch included)."""
        return self.step(label) - self.exposed(label)

    def rank(self, label: str) -> int:
        return self.ranked.index(label) + 1

    @property
    def first(self) -> str:
        return self.ranked[0]

    def unresolved(self) -> list[str]:
        """The other rows within the resolution of the first."""
        top = self.step(self.first)
        return [k for k in self.ranked[1:] if self.step(k) < top * (1 + RESOLUTION)]

    def beyond(self) -> list[str]:
        top = self.step(self.first)
        return [k for k in self.ranked[1:] if self.step(k) >= top * (1 + RESOLUTION)]


@lru_cache(None)     # read once: several blocks quote it
def mech() -> dict:
    return json.loads(Path("docs/results/mechanisms.json").read_text())


@lru_cache(None)     # read once: several blocks quote it
def checks() -> dict:
    return json.loads(Path("docs/results/checks.json").read_text())


@lru_cache(None)     # read once: several blocks quote it
def scaling(model: str) -> dict:
    data = json.loads(Path(f"docs/results/scaling_{model}.json").read_text())
    return {k: {int(g): t for g, t in v} for k, v in data.items() if k != "compute_source"}


@lru_cache(None)
def run(model: str, cluster: str, strategy: str, scheduler: str = "fifo", gbit: float | None = None,
        strategy_options: tuple = (), interference: float | None = None, scheduler_options: tuple = ()):
    hardware = {"nic_gbit": gbit} if gbit else {}
    return simulate(SimulationConfig(topology=TOPOLOGY[cluster], model=model, strategy=strategy,
                                     scheduler=scheduler, iterations=ITERATIONS, efficiency_baseline=False,
                                     hardware=hardware, strategy_options=dict(strategy_options),
                                     scheduler_options=dict(scheduler_options),
                                     interference=interference))


def run_ms(*a, **kw) -> float:
    return run(*a, **kw).step_time * 1e3


# ---- words --------------------------------------------------------------------------

def short(label: str) -> str:
    """The page's names: DDP for allreduce/fifo, embrace-2d for embrace under 2D, X/2D."""
    strategy, scheduler = label.split("/")
    if strategy == "allreduce":
        return "DDP" if scheduler == "fifo" else f"DDP under {'2D' if scheduler == 'embrace-2d' else scheduler}"
    if scheduler == "embrace-2d":
        return "embrace-2d" if strategy == "embrace" else f"{strategy}/2D"
    if strategy in ("fsdp", "distopt") and scheduler == "fifo":
        return strategy
    return label


def ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def x(v: float) -> str:
    return f"{v:.2f}×"


def pct(v: float, digits: int = 1) -> str:
    return f"{v * 100:.{digits}f} %".replace("-", "−")


def span(values, fmt="{:.2f}", sep="–") -> str:
    lo, hi = min(values), max(values)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)}{sep}{fmt.format(hi)}"


def listing(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def place(c: Cell, label: str) -> str:
    """Where a row stands in its matrix: last, or its rank and the rows behind it."""
    n = len(c.ranked)
    if c.rank(label) == n:
        return f"last ({c.step(label):.2f} ms)"
    behind = c.ranked[c.rank(label):]
    return (f"{ordinal(c.rank(label))} of {n} ({c.step(label):.2f} ms; only "
            + listing([f"{short(k)} ({c.step(k):.2f})" for k in behind]) + " slower)")


def order(c: Cell, labels: list[str], digits: int = 1) -> str:
    return ", ".join(f"{short(k)} {c.step(k):.{digits}f}" for k in labels)


# ---- the claims table -----------------------------------------------------------------

def s2_rows(m: dict) -> dict:
    return {key: d for key, d in m["s2reducer"].items()}


def claims() -> str:
    m, ck = mech(), checks()
    L, G = "lstm-lm1b", "gnmt"
    R, H = "pcie-rtx3090", "dgx-h100"
    lr, lh, gr, gh = cell(L, R), cell(L, H), cell(G, R), cell(G, H)
    rows = ["| claim (source) | verdict | why |", "|---|---|---|"]

    # Zen: density (a test's figure, not a JSON one)
    rows.append("| LSTM-LM1B embedding-gradient density 1.13 % per GPU batch (Zen, Table 1) | **reproduced** "
                "(1.14 %, `tests/workload/test_row_touches.py` asserts it) | 8,192 *distinct* log-uniform "
                "candidates plus the batch's 2,560 tokens; candidates drawn with repeats gave 0.71 %. Not fitted: "
                "falls out of TensorFlow's sampler. Neither the compute nor the collective model touches it. |")

    # S2 Reducer: bytes
    s2 = s2_rows(m)
    red = {k: d["reduction_vs_allgather"] for k, d in s2.items()}
    key = lambda model, cl: f"{model}, {TOPOLOGY[cl]}"  # noqa: E731
    need(all(v > 0.81 for v in red.values()), "S2 Reducer's byte reduction exceeds 81 % in every cell")
    gnote = s2[key(G, R)]["s2reducer"]["notes"][0]
    nonzero = float(gnote.split(" nonzero elements")[0].split("; ")[-1].replace(",", ""))
    dense_mb = float(gnote.split("dense gradient ")[1].split(" MB")[0])
    rows.append(
        "| S2 Reducer \"reduces 81 % sparse communication overhead\" | **reproduced in direction, exceeded in "
        f"size**: {pct(red[key(L, R)])} (lstm-lm1b) and {pct(red[key(G, R)])} (gnmt) fewer embedding-gradient "
        f"bytes per GPU than the sparse AllGather on 16 RTX 3090s; {pct(red[key(L, H)])} / {pct(red[key(G, H)])} "
        "on 128 H100s (the S2 Reducer table below) | Bytes, not times: no compute or collective model moves them. "
        f"gnmt's zoo default of 24 real tokens per side touches few rows (the 16 GPUs' union is "
        f"{nonzero / (dense_mb * 1e6 / 4) * 100:.0f} % of the table). At the authors' sizing the sketch is 0.5 % "
        "of the table and the bitmap one fp32 per row, whatever the GPU count; AllGather's volume grows as "
        "(N−1)·U·(4D+8). Against their own 16-GPU GNMT the reduction is larger than 81 %. Their baselines are "
        "public, in the repository embsim cites (`GNMT/seq2seq/train/gradient_reducers.py` at ef65e28; checked "
        "2026-12-06): `Exact_Embed_Reducer` all-gathers `tensor.to_sparse()` element by element (two int64 "
        "indices and an fp32 value per nonzero, padded to the largest count: ~20 B per element, about 5x "
        "embsim's row-wise 4D+8 B per row at D = 1024), `SparCML_Reducer` all-reduces the dense matrix, "
        "`Parallax_Reducer` gathers to one rank and broadcasts, `OminiReducer` all-reduces a bitmap and then "
        "the union's rows; all of them run after the whole backward, as S2 does. embsim's `allgather` is the "
        "leaner row-wise one, so these byte reductions are against a smaller baseline than theirs. |")

    # S2 Reducer: 1.8x
    s2ms = {g: {s: run_ms(L, R, s, gbit=g) for s in ("s2reducer", "allgather", "embrace", "ps")} for g in NIC_GBITS}
    over = {g: {s: v[s] / v["s2reducer"] for s in ("allgather", "embrace", "ps")} for g, v in s2ms.items()}
    dense_after = (("message_size", 2e9),)
    gn = {g: (run_ms(G, R, "allreduce", gbit=g, scheduler_options=dense_after), run_ms(G, R, "s2reducer", gbit=g))
          for g in (None,) + NIC_GBITS}
    gn_over = {g: a / s for g, (a, s) in gn.items()}
    g1 = {s: run_ms(G, R, s, gbit=1) for s in ("allgather", "ps")}
    at100 = {(mo, cl): cell(mo, cl).step("allgather/fifo") / cell(mo, cl).step("s2reducer/fifo")
             for mo in (L, G) for cl in (R, H)}
    need(max(over[1].values()) >= 1.8, "S2 Reducer reaches 1.8x over some baseline on lstm-lm1b at 1 GbE")
    need(max(at100[(L, R)], at100[(L, H)]) < 1, "S2 Reducer is slower than allgather on lstm-lm1b at 100 Gb/s")
    one = s2ms[1]
    rtx_comp = [gr.compute(k) for k in gr.rows]
    h_comp = [gh.compute(k) for k in gh.rows]
    level = abs(gr.step("s2reducer/priority") / gr.step("embrace/embrace-2d") - 1)
    rows.append(
        "| S2 Reducer \"1.8× speedup compared to state-of-the-art approaches\" | **reproduced on lstm-lm1b at 1 "
        "GbE, not on fast networks** (16 RTX 3090s as 4x4, fifo, the NIC line rate lowered as `embsim simulate "
        "--hardware nic_gbit=N` does): s2reducer "
        f"{one['s2reducer']:.0f} ms against allgather {one['allgather']:.0f} ({x(over[1]['allgather'])}), embrace "
        f"{one['embrace']:.0f} ({x(over[1]['embrace'])}), ps {one['ps']:.0f} ({x(over[1]['ps'])}); "
        + "; ".join(f"at {g} Gb/s " + " / ".join(x(over[g][s]) for s in ("allgather", "embrace", "ps"))
                    for g in (10, 25))
        + "; at 100 Gb/s the figures below. The authors' LSTM launch script logs to `1G_network/` (`LSTM/run.sh` "
        "at ef65e28), the only hint of the network they measured on. On gnmt, against their own kind of "
        "baseline, a dense AllReduce after the whole backward (`--strategy allreduce --option "
        f"message_size=2e9`, apex DDP), S2 is {x(gn_over[None])} (100 Gb/s), {x(gn_over[25])} (25), "
        f"{x(gn_over[10])} (10), {x(gn_over[1])} (1 GbE); against embsim's overlapped baselines at 1 GbE "
        f"{x(g1['allgather'] / gn[1][1])} of allgather, {x(g1['ps'] / gn[1][1])} of ps. At 100 Gb/s: "
        "**contradicted as the authors' code runs it** (its trainer's sync after the whole backward): "
        f"{x(at100[(L, R)])} / {x(at100[(L, H)])} of allgather on lstm-lm1b (RTX 3090s / H100s), "
        f"{x(at100[(G, R)])} / {x(at100[(G, H)])} on gnmt, and "
        f"{x(gr.step('allreduce/fifo') / gr.step('s2reducer/fifo'))} of DDP on gnmt / RTX 3090s. History: on "
        "2026-12-04 (before the sync after the backward) 0.89× of allgather for lstm-lm1b on 16 RTX 3090s and "
        "0.70× on 128 H100s (whole-table to_sparse, to_dense and dense optimizer passes on a 406 M-element table "
        "every step); 1.01× / 1.01× for gnmt (within the model's error); before its compute was the authors' (a sparse gradient, "
        "the union's rows only): 1.49× / 1.40× and 1.04× / 1.03× | GNMT's step is compute "
        f"({span(rtx_comp, '{:.0f}')} ms of a {span([gr.step(k) for k in gr.rows], '{:.0f}')} ms step on RTX "
        f"3090s, {span(h_comp, '{:.0f}')} ms of {span([gh.step(k) for k in gh.rows], '{:.0f}')} ms on H100s, "
        "step minus exposed communication, interference included); only the LSTM LM with its 793k-row table is "
        "communication-bound enough, and there the whole-table passes cost more than the sketch saves: "
        f"s2reducer/fifo {lr.step('s2reducer/fifo'):.2f} ms against embrace/fifo's {lr.step('embrace/fifo'):.2f} "
        f"on RTX 3090s, {lh.step('s2reducer/fifo'):.2f} against {lh.step('embrace/fifo'):.2f} on H100s. On gnmt "
        f"s2reducer/priority is within {pct(level)} of embrace-2d on RTX 3090s "
        f"({gr.step('s2reducer/priority'):.2f} vs {gr.step('embrace/embrace-2d'):.2f} ms), and s2reducer/fifo, "
        f"which exposes the whole dense AllReduce after the backward, is {place(gr, 's2reducer/fifo')} on RTX "
        f"3090s and {place(gh, 's2reducer/fifo')} on H100s. |")

    # S2 accuracy
    others = {k: d["s2reducer"]["notes"][0] for k, d in s2.items()}
    carried = {k: float(re.search(r"carries ([\d.]+) other elements", n).group(1)) for k, n in others.items()}
    exact = {k: re.search(r"([\d.]+) % decode exactly", n).group(1) for k, n in others.items()}
    lo, hi = min(carried, key=carried.get), max(carried, key=carried.get)
    gpus = lambda k: 16 if "pcie" in k else 128  # noqa: E731
    rows.append(
        "| S2 Reducer converges to the same accuracy | **cannot be addressed** (a simulator has no accuracy) — but "
        f"the sketch as sized **loses nearly everything** in decoding: {span([float(v) for v in exact.values()], '{:.1f}')} % "
        "of the summed gradient's elements are alone in their bucket; each decoded value carries the sum of "
        f"{carried[lo]:.0f} ({lo.split(',')[0]}, {gpus(lo)} GPUs) to {carried[hi]:.0f} ({hi.split(',')[0]}, "
        f"{gpus(hi)} GPUs) other elements | One row of c = 0.5 % of V·D buckets holds the union's U·D nonzero "
        "elements: load U·D/c ≫ 1. Either accuracy survives a very noisy gradient or their decoding differs from a "
        "plain count sketch; the notes of every run give the collision figures. |")

    # EmbRace 2D
    rows.append(embrace_2d_row(m, ck))
    rows.append(overlap_row(m))
    rows.append(embrace_241_row(m))
    rows.append(embrace_3066_row())
    rows.append(dense_models_row())
    rows.append(priority_row(ck))
    rows.append(ps_row(m))
    return "\n".join(rows) + "\n"


ABL_CELLS = (("lstm-lm1b", "pcie-rtx3090"), ("gnmt", "pcie-rtx3090"), ("lstm-lm1b", "dgx-h100"), ("gnmt", "dgx-h100"))
PARTS = ("reorder", "defer", "prefetch", "cross_iteration")


def ablation(m: dict, which: str, model: str, cluster: str) -> dict:
    rows = {r["run"]: r["step_time_ms"] for r in m[which][f"{model}, {TOPOLOGY[cluster]}"]["rows"]}
    full = rows["embrace-2d"]
    return {"gain": 1 - full / rows["fifo"], "full": full, "fifo": rows["fifo"],
            **{p: rows[f"embrace-2d, {p} off"] - full for p in PARTS}}


def where(model: str, cluster: str) -> str:
    return f"{model} / {CLUSTER_WORDS[cluster]}"


def embrace_2d_row(m: dict, ck: dict) -> str:
    a64 = {c: ablation(m, "ablation", *c) for c in ABL_CELLS}
    a32 = {c: ablation(m, "ablation_credit32", *c) for c in ABL_CELLS}
    lr = ("lstm-lm1b", "pcie-rtx3090")
    others = [c for c in ABL_CELLS if c != lr]
    big = lambda a: max(PARTS, key=lambda p: a[p])  # noqa: E731
    need(all(a64[c][p] > 0 for c in others for p in ("reorder", "defer", "prefetch")),
         "reordering, deferral and prefetching each contribute at 64 MB in every cell but lstm-lm1b / RTX 3090s")
    need(a64[lr]["reorder"] < 0, "reordering costs time on lstm-lm1b / RTX 3090s at 64 MB")
    need(all(abs(a[c]["cross_iteration"]) < 0.005 for a in (a64, a32) for c in ABL_CELLS if (a, c) != (a32, lr))
         and a32[lr]["cross_iteration"] > 0, "the cross-iteration key contributes only on lstm-lm1b / RTX 3090s at 32 MB")
    need(all(big(a32[c]) == "reorder" for c in ABL_CELLS if c[1] == "pcie-rtx3090"),
         "reordering is the big part at 32 MB on RTX 3090s")
    need(big(a64[("gnmt", "pcie-rtx3090")]) == "prefetch", "prefetching is the big part on gnmt / RTX 3090s at 64 MB")
    need(all(big(a[c]) == "prefetch" for a in (a64, a32) for c in ABL_CELLS if c[1] == "dgx-h100"),
         "prefetching is the big part on H100s at both credits")
    d32 = {c: a64[c]["full"] - a32[c]["full"] for c in ABL_CELLS}
    faster32 = [c for c in ABL_CELLS if d32[c] > 0.005]
    level32 = [c for c in ABL_CELLS if abs(d32[c]) <= 0.005]
    need(len(faster32) + len(level32) == 4, "a 32 MB credit is never slower than 64 MB")
    ids = ck["runs"]["lstm-lm1b h100 embrace/fifo"]
    wait = ck["lookup_wait"]
    w64, w32 = wait["gnmt rtx embrace/embrace-2d"], wait["gnmt rtx embrace/embrace-2d, 32 MB credit"]
    block = w64["in_flight"][0]
    need(block["name"].startswith("grad:classifier"), "the lookup AlltoAll waits behind the classifier's gradient")
    g = lambda a: " / ".join(f"{a[c]['gain'] * 100:.1f}" for c in ABL_CELLS)  # noqa: E731
    gr64, gh64, lh64 = a64[("gnmt", "pcie-rtx3090")], a64[("gnmt", "dgx-h100")], a64[("lstm-lm1b", "dgx-h100")]
    return (
        "| EmbRace: 2D scheduling speeds EmbRace up | **reproduced where the credit lets priority act** (with the "
        "posted blocks run one at a time on NCCL's stream): embrace-2d over embrace/fifo at the default 64 MB "
        f"credit {pct(a64[lr]['gain'])} (lstm-lm1b, RTX 3090s: every block is posted when ready, so the stream runs "
        f"FIFO's order), {pct(a64[('gnmt', 'pcie-rtx3090')]['gain'])} (gnmt, RTX), "
        f"{pct(a64[('lstm-lm1b', 'dgx-h100')]['gain'])} (lstm-lm1b, H100s), {pct(gh64['gain'])} (gnmt, H100s); "
        f"with a 32 MB credit {g(a32)} % (4-iteration ablations, the 2D ablation tables below). "
        + ("The gnmt gains are within the model's error. "
           if all(abs(a[c]["gain"]) < RESOLUTION for a in (a64, a32) for c in ABL_CELLS if c[0] == "gnmt") else "")
        + "History: on 2026-12-04, with posted blocks sharing the links at once, 10.0 / 4.8 / 12.4 / 3.0 % "
        "(32 MB: 11.6 / 6.6 / 11.9 / 2.3 %) | At the default credit reordering, deferral and prefetching each "
        "contribute in every cell but lstm-lm1b / RTX 3090s, where every block is posted as soon as it is ready and "
        f"reordering costs {-a64[lr]['reorder']:.2f} ms (deferral {a64[lr]['defer']:.2f}, prefetch "
        f"{a64[lr]['prefetch']:.2f}). The cross-iteration key contributes only there, and only at 32 MB "
        f"({a32[lr]['cross_iteration']:.2f} ms; without it 2D is then {a32[lr]['fifo'] - a32[lr]['full'] - a32[lr]['cross_iteration']:.2f} "
        "ms ahead of fifo), where the embedding AlltoAll shares a node's one NIC among 4 GPUs and the queue binds; "
        "nothing in the other cells. At 32 MB reordering is the big part on RTX 3090s (lstm-lm1b "
        f"{a32[lr]['reorder']:.2f} ms, gnmt {a32[('gnmt', 'pcie-rtx3090')]['reorder']:.2f}); on gnmt / RTX 3090s "
        f"at the default credit prefetching is ({gr64['prefetch']:.2f} ms; deferral {gr64['defer']:.2f}, "
        f"reordering {gr64['reorder']:.2f}). On H100s prefetching is the big part at both credits: lstm-lm1b "
        f"{lh64['prefetch']:.2f} ms (exchanging the next batch's ids during this backward hides their AllGather, "
        f"which the ring step floor makes {ids['comm_ms']['all_gather']:.2f} ms per step, "
        f"{ids['comm_mb']['all_gather']:.1f} MB per GPU over 16 nodes) and gnmt {gh64['prefetch']:.2f} ms at 64 MB "
        f"(deferral {gh64['defer']:.2f}). The AllReduce-backend credit is not the best one: a 32 MB credit is faster "
        "in " + listing([f"{where(*c)} ({d32[c]:.2f} ms)" for c in faster32])
        + (f", and level on {listing([where(*c) for c in level32])}" if level32 else "")
        + f"; on gnmt / RTX 3090s `results_checks.py` shows the next forward's lookup AlltoAll, {w64['mb']:.1f} MB, "
        f"waiting {w64['wait_ms']:.2f} ms behind a {block['mb']:.1f} MB block of the classifier's weight-gradient "
        f"AllReduce at the 64 MB credit and {w32['wait_ms']:.2f} ms at 32 MB: the reordered backward makes that "
        "gradient ready last. A one- or two-block credit makes the step hinge on such arrival coincidences. |")


def overlap_row(m: dict) -> str:
    ov = m["overlap"]
    k = lambda mo, cl: f"{mo}, {TOPOLOGY[cl]}"  # noqa: E731
    full = [ov[c][r] for c in ov for r in ("embrace-2d", "embrace-2d, 32 MB credit")]
    need(all(r["during_next_forward_mb"] < 0.05 and r["deferred_started_during_next_forward"] == 0 for r in full),
         "with every part on no embedding-gradient traffic is carried during the next forward")
    off = lambda mo, cl, credit: ov[k(mo, cl)]["embrace-2d, reorder off" + (", 32 MB credit" if credit else "")]  # noqa: E731
    lr32, lr64 = off("lstm-lm1b", "pcie-rtx3090", True), off("lstm-lm1b", "pcie-rtx3090", False)
    g = {cl: (off("gnmt", cl, False), off("gnmt", cl, True)) for cl in CLUSTERS}
    need(all(abs(a["during_next_forward_mb"] - b["during_next_forward_mb"]) < 0.05 for a, b in g.values()),
         "gnmt carries the same during the next forward at both credits with reordering off")
    lh32, lh64 = off("lstm-lm1b", "dgx-h100", True), off("lstm-lm1b", "dgx-h100", False)
    need(lh64["during_next_forward_mb"] < 0.05, "lstm-lm1b / H100s carries none during the next forward at 64 MB")
    start = _deferred_lead()
    defer = [ablation(m, "ablation", *c)["defer"] for c in ABL_CELLS]
    mb = lambda mo: ov[k(mo, "pcie-rtx3090")]["embrace-2d"]["embedding_gradient_mb"]  # noqa: E731
    blocks = lambda r: f"{r['deferred_started_during_next_forward']} of {r['deferred_blocks']}"  # noqa: E731
    return (
        "| EmbRace: embedding communication overlaps the next forward | **not reproduced with every part on**: in all "
        "four cells, at both credits, each iteration's embedding-gradient traffic "
        f"({mb('lstm-lm1b'):.1f} MB lstm-lm1b, {mb('gnmt'):.1f} MB gnmt) is carried entirely within its own backward — "
        "reordering makes it ready early and the link is free then — and 0 of the deferred blocks start during the "
        "next forward. With reordering off some of the exchange is carried during the next forward: on lstm-lm1b / "
        f"RTX 3090s {lr32['during_next_forward_mb']:.1f} MB with a 32 MB credit ({blocks(lr32)} deferred blocks "
        f"start inside it; trace below) and {lr64['during_next_forward_mb']:.1f} MB at 64 MB (the block starts "
        f"{start:.2f} ms before the forward and overlaps it); on gnmt {g['pcie-rtx3090'][0]['during_next_forward_mb']:.1f} "
        f"MB (RTX 3090s) and {g['dgx-h100'][0]['during_next_forward_mb']:.1f} MB (H100s) at both credits "
        f"({blocks(g['pcie-rtx3090'][0])} blocks); on lstm-lm1b / H100s {lh32['during_next_forward_mb']:.1f} MB at "
        "32 MB and none at 64 MB | Deferral still pays with reordering on "
        f"({span(defer)} ms at the default credit): the embedding's backward no longer waits for its AlltoAll and "
        "the deferred part's update leaves the critical path. Overlap with the next forward is the fallback the "
        "mechanism offers, not where the traffic goes here. |")


def _deferred_lead() -> float:
    """How long before iteration 2's first forward op the reorder-off (64 MB) trace's
    deferred block starts, ms (results_figures.py prints both)."""
    data = json.loads(Path("docs/results/embrace-2d_reorder-off_lstm-lm1b_pcie-rtx3090.trace.json").read_text())
    ev = [e for e in data["traceEvents"] if e["ph"] == "X" and e["pid"] == 0]
    it = lambda e, k: e["args"].get("iteration") == k  # noqa: E731
    fwd2 = min(e["ts"] for e in ev if it(e, 2) and e["tid"] == 0 and e["name"].startswith("fwd:"))
    block = next(e for e in ev if it(e, 1) and e["args"].get("tensor") == "embrace-bwd:word_embedding#deferred")
    need(block["ts"] < fwd2 < block["ts"] + block["dur"], "the deferred block starts before the next forward and overlaps it")
    return (fwd2 - block["ts"]) / 1e3


def embrace_241_row(m: dict) -> str:
    L, G = "lstm-lm1b", "gnmt"
    e2d = "embrace/embrace-2d"
    over = {(mo, cl): {b: cell(mo, cl).step(f"{b}/fifo") / cell(mo, cl).step(e2d) for b in ("ps", "allgather", "s2reducer")}
            for mo in (L, G) for cl in CLUSTERS}
    lr = cell(L, "pcie-rtx3090")
    first = lr.first
    gn = [v for cl in CLUSTERS for v in over[(G, cl)].values()]
    ps = m["ps"]
    pk = lambda mo, cl: f"{mo}, {TOPOLOGY[cl]}"  # noqa: E731
    load = {cl: [ps[pk(mo, cl)]["ps colocated"]["server_load_max_over_mean"] for mo in (L, G)] for cl in CLUSTERS}
    per_gpu = {cl: [_ps_load_per_gpu(mo, cl) for mo in (L, G)] for cl in CLUSTERS}
    hashed = {cl: ps[pk(L, cl)]["ps dedicated, rows hashed"]["step_ms"] / ps[pk(L, cl)]["embrace/embrace-2d"]["step_ms"]
              for cl in CLUSTERS}
    ded = {(mo, cl): ps[pk(mo, cl)]["ps dedicated"]["step_ms"] / ps[pk(mo, cl)]["ps colocated"]["step_ms"] - 1
           for mo in (L, G) for cl in CLUSTERS}
    worst = max(ded, key=ded.get)
    need(all(abs(v) < 0.05 for k, v in ded.items() if k != worst), "dedicated servers change little but in one cell")
    psr = lr.step("ps/embrace-2d")
    return (
        "| EmbRace \"up to 2.41× over state-of-the-art baselines\" (16 GPUs) | embrace-2d over ps "
        f"{x(over[(L, 'pcie-rtx3090')]['ps'])} (lstm-lm1b, RTX 3090s"
        + (f"; {short(first)} is first there" if first != e2d else "") + f") and {x(over[(L, 'dgx-h100')]['ps'])} "
        f"(H100s), over allgather {x(over[(L, 'pcie-rtx3090')]['allgather'])} / {x(over[(L, 'dgx-h100')]['allgather'])}, "
        f"over s2reducer {x(over[(L, 'pcie-rtx3090')]['s2reducer'])} / {x(over[(L, 'dgx-h100')]['s2reducer'])}; on gnmt "
        f"{span(gn)}× (fifo baselines). History: before 2026-12-05 **nearly, against PS only, not against AllGather "
        "or S2 Reducer**: embrace-2d over ps 1.23× on lstm-lm1b / RTX 3090s, 1.61× on 128 H100s; over allgather "
        "1.59× and 1.62×; over s2reducer 1.07× and 1.16×; for gnmt 0.99–1.04× | PS as BytePS places rows "
        "(1M-parameter partitions, the hottest words in the first) overloads one CPU server: max/mean load "
        f"{span(load['pcie-rtx3090'])} (4 servers) to {span(load['dgx-h100'])} (16) of the nodes' pushed unions (a "
        "node's union holds each hot row once, so the skew is less than per-GPU pushes', "
        f"{span(per_gpu['pcie-rtx3090'])} and {span(per_gpu['dgx-h100'])}). With rows hashed evenly (dedicated "
        f"servers, fifo) PS is still {x(hashed['pcie-rtx3090'])} (RTX) and {x(hashed['dgx-h100'])} (H100) behind "
        "embrace-2d on lstm-lm1b"
        + (f" (under the 2D schedule, in BytePS's partitions, it is ahead on RTX 3090s: {psr:.2f} against "
           f"{lr.step(e2d):.2f} ms)" if psr < lr.step(e2d) else "")
        + "; dedicated servers change little in the other cells (the workers' NICs and the hot server set the time) "
        f"and cost {pct(ded[worst])} on {where(*worst)}. |")


def _ps_load_per_gpu(model: str, cluster: str) -> float:
    """Server load max/mean with every GPU pushing its own rows (no local aggregation)."""
    r = run(model, cluster, "ps", strategy_options=(("local_aggregation", False),))
    note = next(n for n in r.notes if "server load max/mean" in n)
    return float(re.search(r"server load max/mean ([\d.]+)", note).group(1))


def embrace_3066_row() -> str:
    L, R, H = "lstm-lm1b", "pcie-rtx3090", "dgx-h100"
    lr, lh = cell(L, R), cell(L, H)
    ddp = "allreduce/fifo"
    f100 = lr.step(ddp) / lr.step("embrace/fifo")
    slow = {g: run_ms(L, R, "allreduce", gbit=g) / run_ms(L, R, "embrace", gbit=g) for g in NIC_GBITS}
    need(max(slow.values()) < 30.66 / 2, "EmbRace's factor over DDP stays far below 30.66x at every NIC speed")
    sparse = [k for k in lr.rows if k.split("/")[0] in ("embrace", "allgather", "ps", "s2reducer")]
    sp = {k: lr.step(ddp) / lr.step(k) for k in sparse}
    top = max(sp, key=sp.get)
    emb = lr.rows["embrace/fifo"]["comm_bytes_per_gpu"]
    return (
        "| EmbRace \"up to 30.66×\" (v1, over dense baselines) | **not reproduced: the factor saturates** (corrected "
        "2026-12-06, probe Q; it read \"in range\" before): embrace/fifo over DDP on lstm-lm1b, 16 RTX 3090s, "
        f"{x(f100)} at 100 Gb/s (embrace-2d {x(lr.step(ddp) / lr.step('embrace/embrace-2d'))}; 1.6 GB table over one "
        f"NIC per node; the sparse rows {span(sp.values())}×, {short(top)} the most), "
        + ", ".join(f"{x(slow[g])} at {g if g > 1 else '1 GbE'}" for g in NIC_GBITS)
        + f" (`--hardware nic_gbit=N`); on 128 H100s embrace/fifo {x(lh.step(ddp) / lh.step('embrace/fifo'))}, "
        f"embrace-2d {x(lh.step(ddp) / lh.step('embrace/embrace-2d'))} | The factor is the dense table's AllReduce "
        "over the NIC against EmbRace's own traffic, and EmbRace's step is bound by the same NIC once it is slow: "
        f"its dense LSTM AllReduce ({emb['all_reduce'] / 1e6:.1f} MB per GPU) and embedding AlltoAll "
        f"({emb['alltoall'] / 1e6:.1f} MB) grow with 1/bandwidth as DDP's table does, so slower NICs tend to a "
        "fixed ratio, not beyond. A larger table would give more; so would a baseline that pushes the dense table "
        "through a parameter server, as BytePS does (it has no sparse path). FSDP moves the same dense table as a "
        f"reduce-scatter and an all-gather and stays {x(lr.step('fsdp/fifo') / lr.step('embrace/embrace-2d'))} "
        f"(RTX 3090s) and {x(lh.step('fsdp/fifo') / lh.step('embrace/embrace-2d'))} (H100s) behind embrace-2d. |")


def dense_models_row() -> str:
    cells = {(mo, cl): cell(mo, cl) for mo in ("bert-base", "transformer-wmt") for cl in CLUSTERS}
    need(all("embrace/embrace-2d" not in c.rows and "embrace/embrace-2d" in c.all for c in cells.values()),
         "embrace-2d refuses bert-base and transformer-wmt")
    h = {mo: cells[(mo, "dgx-h100")] for mo in ("transformer-wmt", "bert-base")}
    r = {mo: cells[(mo, "pcie-rtx3090")] for mo in ("transformer-wmt", "bert-base")}
    rel = lambda c: c.step("fsdp/fifo") / c.step("allreduce/fifo") - 1  # noqa: E731
    need(all(c.first == "distopt/fifo" for c in h.values()), "distopt/fifo is first on both H100 matrices")
    need(all(c.ranked[-1] == "fsdp/fifo" for c in h.values()), "fsdp/fifo is last on both H100 matrices")
    rtx = max(abs(rel(c)) for c in r.values())
    return (
        "| EmbRace on BERT / Transformer (embedding treated as sparse) | **cannot be addressed as stated**: their "
        "tables are tied to a full softmax, whose gradient is dense; since 2026-12-05 embrace-2d refuses these "
        "plans, as it refuses allreduce's (the 1.1× it showed before was its reordering of allreduce's plan under "
        "other names) | Every sparse strategy falls back to AllReduce there (a note says so, and the matrices mark "
        "those rows as one plan). History: before 2026-12-05 embrace-2d \"won\" 1.12× (bert-base) and 1.12× "
        "(transformer-wmt) on RTX 3090s, 1.03× and 1.02× on H100s, all of it on the *dense* AllReduces: switching "
        "reordering off gave exactly priority's step, and deferral, prefetching and the cross-iteration key were "
        "worth 0.00 ms. distopt/fifo is first on both H100 matrices (below); fsdp/fifo is within "
        f"{pct(rtx)} of DDP on RTX 3090s and slower on H100s: {pct(rel(h['transformer-wmt']))} (transformer-wmt) "
        f"and {pct(rel(h['bert-base']))} (bert-base), last in both matrices. |")


def priority_pairs() -> list[dict]:
    pairs = []
    for cl in CLUSTERS:
        for mo in MODELS:
            c = cell(mo, cl)
            for label in c.rows:
                strategy, scheduler = label.split("/")
                if scheduler == "priority" and f"{strategy}/fifo" in c.rows:
                    f = f"{strategy}/fifo"
                    pairs.append(dict(model=mo, cluster=cl, strategy=strategy, rel=c.step(label) / c.step(f) - 1,
                                      d_step=c.step(label) - c.step(f), d_exposed=c.exposed(label) - c.exposed(f),
                                      d_compute=c.compute(label) - c.compute(f), fifo=c.step(f), prio=c.step(label)))
    return pairs


def priority_row(ck: dict) -> str:
    pairs = priority_pairs()
    slower = [p for p in pairs if p["d_step"] > 0]
    wins = [p for p in pairs if p["d_step"] < 0]
    less = [p for p in wins if p["d_exposed"] < 0]
    lower = [p for p in pairs if p["d_compute"] < 0]
    notlower = [p for p in pairs if p["d_compute"] >= 0]
    worst = max(pairs, key=lambda p: p["rel"])
    best_c = min(lower, key=lambda p: p["d_compute"])
    runs = ck["runs"]
    v = "lstm-lm1b rtx allreduce/{}, variation 0"
    extra = runs[v.format("fifo")]["extra_ms"]
    gap = runs[v.format("fifo")]["compute_ms"] - runs[v.format("priority")]["compute_ms"]
    lstm_layers = [t for k, t in extra.items() if k.startswith("extra:ddp-copy") and ":lstm" in k]
    groups: dict[tuple, list] = {}
    for p in notlower:
        groups.setdefault((p["model"], p["cluster"]), []).append(p)
    described = []
    for (mo, cl), ps in groups.items():
        strategies = sorted(p["strategy"] for p in ps)
        n_pairs = sum(1 for q in pairs if (q["model"], q["cluster"]) == (mo, cl))
        who = "every strategy" if len(ps) == n_pairs else listing(strategies)
        described.append(f"{who} on {where(mo, cl)}, {span([p['d_compute'] for p in ps], '{:+.2f}', ' to ')} ms")
    nointf = []
    for p in notlower:
        if p["strategy"] in ("embrace", "s2reducer"):
            f0 = run(p["model"], p["cluster"], p["strategy"], "fifo", interference=0.0)
            p0 = run(p["model"], p["cluster"], p["strategy"], "priority", interference=0.0)
            cf, cp = f0.compute * 1e3, p0.compute * 1e3     # results_checks.py's compute_ms
            need(cp < cf, f"priority computes less without interference ({p['strategy']} on {where(p['model'], p['cluster'])})")
            nointf.append(f"{p['strategy']} on {where(p['model'], p['cluster'])} {cp:.2f} vs {cf:.2f} ms")
    blocks = ck["blocks"]
    b_p, b_f = blocks["lstm-lm1b h100 allreduce/priority"], blocks["lstm-lm1b h100 allreduce/fifo"]
    curve = ck["allreduce_curve"]["dgx-h100:16x8"]["busbw"]
    hh = ck["head_heavy_25gbps"]
    need(hh["allreduce/priority"] < hh["allreduce/fifo"], "priority wins on the VGG-shaped head")
    more = len(wins) - len(less)
    need(more > len(less), "most of priority's wins come with more exposed communication")
    return (
        "| P3 / ByteScheduler priority beats FIFO | **not reproduced as a communication gain**: with posted "
        f"partitions run one at a time on NCCL's stream, priority is {pct(min(p['rel'] for p in pairs))} .. "
        f"{'+' if worst['rel'] > 0 else ''}{pct(worst['rel'])} of fifo (slower in {len(slower)} of {len(pairs)} pairs; "
        f"the worst {worst['strategy']} on {where(worst['model'], worst['cluster'])}, {worst['prio']:.1f} vs "
        f"{worst['fifo']:.1f} ms); of its {len(wins)} wins {len(less)} have less exposed communication. History: "
        "before 2026-12-05 (posted partitions sharing the links at once) `priority` was between −5.1 % and +43.8 % of "
        "fifo across the cells and slower than fifo in 14 of the 40 strategy × cell pairs (the worst, +43.8 %, "
        "allreduce on lstm-lm1b / H100s, 40.4 vs 28.1 ms, +14.8 ms of exposed communication); of its 26 wins only 9 "
        "had less exposed communication than fifo (by 0.27–2.45 ms) | In {len(lower)} of {len(pairs)} pairs priority's compute reading (step minus exposed "
        f"communication) is below fifo's, by {span([-p['d_compute'] for p in lower])} ms (the most: "
        f"{best_c['strategy']}, {where(best_c['model'], best_c['cluster'])}): fifo runs as a DDP wrapper and pays "
        "its passes over the buckets (PyTorch DDP's copy-in and copy-out kernels: on lstm-lm1b / RTX 3090s with "
        f"allreduce {extra['extra:ddp-copy-out:word_embedding']:.2f} ms for the table's copy-out, "
        f"{extra['extra:ddp-copy-in:word_embedding']:.2f} ms for its copy-in, which a collective overlaps, "
        f"{span(lstm_layers, '{:.2f}')} ms each per LSTM layer; one iteration of the slowest GPU with "
        f"`gpu_variation=0`, where the compute gap is {gap:.2f} ms), while priority, as ByteScheduler, sends each "
        f"tensor's own partitions and pays none. In the other {len(notlower)} ("
        + "; ".join(described) + ") the interference stretch of priority's collectives outweighs that: with "
        "`--interference 0` priority computes less there too (" + ", ".join(nointf) + "). So priority's wins here "
        f"are mostly the wrapper's passes it skips ({more} of its {len(wins)} wins come with more exposed "
        "communication), not better ordering. Where communication decides, these models' big gradients are at the "
        "input side or the step is compute-bound. It wins on a VGG-shaped head (`tests/schedulers`: "
        f"{hh['allreduce/priority']:.1f} vs {hh['allreduce/fifo']:.1f} ms at 25 Gb/s). Its worst loss is block size: "
        f"on lstm-lm1b / H100s the table's {b_p['mb'] / 1e3:.1f} GB dense gradient goes as {b_p['blocks']} blocks of "
        f"up to {b_p['largest_mb']:.1f} MB, one after another on NCCL's stream, {b_p['span_ms']:.1f} ms in all, where "
        f"DDP sends it as one {b_f['mb'] / 1e3:.1f} GB bucket in {b_f['span_ms']:.2f} ms (the collective model on "
        f"128 H100s: a 32 MiB AllReduce at {curve[str(32 << 20)]['busbw']:.0f} GB/s bus bandwidth, 8 GiB at "
        f"{curve[str(8 << 30)]['busbw']:.0f}). |")


def ps_row(m: dict) -> str:
    L, G = "lstm-lm1b", "gnmt"
    ps = m["ps"]
    pk = lambda mo, cl: f"{mo}, {TOPOLOGY[cl]}"  # noqa: E731
    h = ps[pk(L, "dgx-h100")]
    load16 = [ps[pk(mo, "dgx-h100")]["ps colocated"]["server_load_max_over_mean"] for mo in (L, G)]
    load16_gpu = [_ps_load_per_gpu(mo, "dgx-h100") for mo in (L, G)]
    ded = {(mo, cl): ps[pk(mo, cl)]["ps dedicated"]["step_ms"] / ps[pk(mo, cl)]["ps colocated"]["step_ms"] - 1
           for mo in (L, G) for cl in CLUSTERS}
    worst = max(ded, key=ded.get)
    need(all(abs(v) < 0.05 for k, v in ded.items() if k != worst), "co-located and dedicated within 5 % but in one cell")
    gr = ps[pk(G, "pcie-rtx3090")]
    gps = [v["step_ms"] for k, v in gr.items() if k.startswith("ps")]
    emb, e2d = gr["embrace"]["step_ms"], gr["embrace/embrace-2d"]["step_ms"]
    need(max(gps) < emb, "every PS variant is faster than embrace/fifo on gnmt / RTX 3090s")
    c = cell(G, "pcie-rtx3090")
    need(c.first == "ps/embrace-2d", "ps under the 2D schedule is first on gnmt / RTX 3090s")
    within = max(abs(v / e2d - 1) for v in gps)
    resolved = (c.step("embrace/embrace-2d") / c.step("ps/embrace-2d") - 1) < RESOLUTION and \
        all(abs(1 - v / emb) < RESOLUTION for v in gps)
    return (
        "| Parallax / BytePS: PS for sparse variables is a strong baseline | **contradicted for BytePS's placement, "
        "nearly reproduced for even hashing** | See the PS table: partitions concentrate the hot rows on one server "
        f"(max/mean {span(load16, '{:.1f}')} on 16 servers with local aggregation, {span(load16_gpu, '{:.1f}')} "
        f"without); hashed rows bring lstm-lm1b on H100s from {h['ps dedicated']['step_ms']:.1f} to "
        f"{h['ps dedicated, rows hashed']['step_ms']:.1f} ms (dedicated servers), still "
        f"{x(h['ps dedicated, rows hashed']['step_ms'] / h['embrace/embrace-2d']['step_ms'])} embrace-2d. Co-located "
        f"and dedicated servers are within 5 % of each other in every cell but {where(*worst)}, where dedicated "
        f"servers are {pct(ded[worst])} slower ({ps[pk(*worst)]['ps dedicated']['step_ms']:.1f} vs "
        f"{ps[pk(*worst)]['ps colocated']['step_ms']:.1f} ms). On gnmt / RTX 3090s every PS variant under fifo "
        f"({span(gps, '{:.1f}')} ms) is {span([(1 - v / emb) * 100 for v in gps], '{:.1f}')} % faster than "
        f"embrace/fifo ({emb:.1f} ms) and within {pct(within)} of embrace-2d ({e2d:.1f} ms), and ps under the 2D "
        f"schedule is first ({c.step('ps/embrace-2d'):.1f} ms; embrace-2d "
        f"{pct(c.step('embrace/embrace-2d') / c.step('ps/embrace-2d') - 1)} slower)"
        + (", all within the model's error. |" if resolved else ". |"))


# ---- "Where the simulated speedups land" -------------------------------------------------

def stretch(runs: dict, base: str) -> float:
    """Compute the interference adds: the run's compute minus its compute without it."""
    return runs[base]["compute_ms"] - runs[f"{base}, interference 0"]["compute_ms"]


def resolved_word(gap: float) -> str:
    return "resolved by the model" if gap >= RESOLUTION else "not resolved by the model"


def landing() -> str:
    ck = checks()
    runs, models = ck["runs"], ck["models"]
    R, H = "pcie-rtx3090", "dgx-h100"
    lr, lh, gr, gh = cell("lstm-lm1b", R), cell("lstm-lm1b", H), cell("gnmt", R), cell("gnmt", H)
    s2 = mech()["s2reducer"]
    lm, gm = models["lstm-lm1b"], models["gnmt"]
    table = lambda mm: mm["tables"][0]  # noqa: E731
    # lstm-lm1b, RTX 3090s
    ddp = "allreduce/fifo"
    no_int = lambda mo, s: runs[f"{mo} rtx {s}/fifo, interference 0"]["compute_ms"]  # noqa: E731
    sparse = [k for k in lr.rows if k.split("/")[0] in ("embrace", "allgather", "ps", "s2reducer")]
    fifo_sparse = sorted((k for k in sparse if k.endswith("/fifo")), key=lr.step)
    second = lr.ranked[1]
    lead = lr.step(second) / lr.step(lr.first) - 1
    e2d, ef = lr.step("embrace/embrace-2d"), lr.step("embrace/fifo")
    need(abs(e2d / ef - 1) < 0.01, "embrace-2d is level with embrace/fifo on lstm-lm1b / RTX 3090s at 64 MB")
    sent = {s: lr.rows[f"{s}/fifo"]["comm_bytes_per_gpu_total"] / 1e6 for s in ("embrace", "s2reducer", "ps")}
    need(max(sent, key=sent.get) == "embrace", "EmbRace sends the most of embrace, s2reducer and ps")
    c32 = {r["run"]: r["step_time_ms"] for r in mech()["ablation_credit32"]["lstm-lm1b, pcie-rtx3090:4x4"]["rows"]}
    need(lr.step("allgather/embrace-2d") < lr.step("allgather/fifo"), "2D helps allgather on lstm-lm1b / RTX 3090s")
    h_second = lh.ranked[1]
    h_lead = lh.step(h_second) / lh.step(lh.first) - 1
    lstm = (
        f"**lstm-lm1b** ({table(lm)[1] // 1000}k × {table(lm)[2]} table, {lm['params_m'] - lm['embedding_m']:.0f} M "
        "dense parameters). On 16 RTX 3090s behind one 100 Gb/s NIC per node, the dense table's AllReduce "
        f"({s2['lstm-lm1b, pcie-rtx3090:4x4']['allreduce']['embedding_mb'] / 1e3:.0f} GB per GPU per step) makes DDP "
        f"{lr.step(ddp):.1f} ms; fsdp moves the same table as a reduce-scatter and an all-gather "
        f"({lr.step('fsdp/fifo'):.1f} ms: no bucket copies and 1/16 of AdaGrad's update, "
        f"{no_int('lstm-lm1b', 'allreduce') - no_int('lstm-lm1b', 'fsdp'):.1f} ms less compute than DDP without "
        f"interference, but {lr.exposed('fsdp/fifo'):.0f} ms of its step exposed). Every sparse row is "
        f"{span([lr.step(ddp) / lr.step(k) for k in sparse], '{:.1f}')}× faster and the ranking under fifo is "
        + " < ".join(f"{k.split('/')[0]} ({lr.step(k):.1f})" for k in fifo_sparse)
        + f", with {short(lr.first)} first at {lr.step(lr.first):.1f} ms, {pct(lead)} ahead of the next row "
        f"({short(second)}): {resolved_word(lead)}. embrace-2d ({e2d:.1f} ms) is level with embrace/fifo at the "
        "default credit, which posts every block as soon as it is ready, so NCCL's stream runs them in fifo's order "
        f"({c32['embrace-2d']:.2f} ms with a 32 MB credit). EmbRace sends the most of the three "
        f"({sent['embrace']:.0f} MB per GPU against {sent['s2reducer']:.0f} and {sent['ps']:.0f}) through each "
        "node's one NIC, which its 4 GPUs share (since 2026-12-03 the AlltoAll model charges that share; before, "
        "each GPU had the whole NIC and embrace-2d led by 10.5 %). ps/2D's pulls are not NCCL kernels and still "
        f"overlap the stream; the 2D schedule also helps allgather ({lr.step('allgather/embrace-2d'):.1f} ms, from "
        f"{lr.step('allgather/fifo'):.1f}), whose embedding payload it splits the same way. On 128 H100s "
        f"{short(lh.first)} is first ({lh.step(lh.first):.1f} ms, {pct(h_lead)} ahead of {short(h_second)} "
        f"{lh.step(h_second):.1f}: {resolved_word(h_lead).replace(' by the model', '')}), then "
        + order(lh, lh.ranked[2:-1]) + f", and {short(lh.ranked[-1])} last ({lh.step(lh.ranked[-1]):.1f}). "
        "In the ps rows a node of 8 GPUs pushes the union of their rows once (local aggregation), but copies them into "
        "host memory before the push and back after the pull, on the chain from the embedding's backward to its "
        "next forward.")
    # gnmt
    rtx_comp = [gr.compute(k) for k in gr.rows]
    note = s2["gnmt, pcie-rtx3090:4x4"]["s2reducer"]["notes"][0]
    nonzero = float(note.split(" nonzero elements")[0].split("; ")[-1].replace(",", ""))
    dense_mb = float(note.split("dense gradient ")[1].split(" MB")[0])
    near = gr.unresolved()
    g1, g2 = gr.first, gr.ranked[1]
    e2d = "embrace/embrace-2d"
    ck_e, ck_a = runs["gnmt rtx embrace/embrace-2d"], runs["gnmt rtx allgather/embrace-2d"]
    e0, a0 = runs["gnmt rtx embrace/embrace-2d, interference 0"], runs["gnmt rtx allgather/embrace-2d, interference 0"]
    need(e0["step_ms"] > a0["step_ms"], "without interference embrace-2d is behind allgather/2D on gnmt / RTX 3090s")
    need(g2 == "allgather/embrace-2d", "allgather/2D is second on gnmt / RTX 3090s")
    worst2 = gr.ranked[-2]
    need(worst2 == "fsdp/fifo", "fsdp is second-last on gnmt / RTX 3090s")
    root = gm["fsdp_units_m"]["root"]
    fs0, dd0 = runs["gnmt h100 fsdp/fifo, interference 0"], runs["gnmt h100 allreduce/fifo, interference 0"]
    fs, dd = runs["gnmt h100 fsdp/fifo"], runs["gnmt h100 allreduce/fifo"]
    need(fs0["step_ms"] < dd0["step_ms"], "without interference fsdp is faster than DDP on gnmt / H100s")
    passes = sum(v for k, v in dd0["extra_ms"].items() if k.startswith("extra:ddp"))
    hs = [gh.step(k) for k in gh.ranked]
    beyond = gh.beyond()
    gnmt = (
        f"**gnmt** ({table(gm)[1] // 1000}k × {table(gm)[2]} shared table, {gm['params_m']:.0f} M parameters). "
        f"Compute-bound ({span(rtx_comp, '{:.0f}')} ms of a {span([gr.step(k) for k in gr.rows], '{:.0f}')} ms step "
        f"on RTX 3090s); the union of touched rows over 16 GPUs is {nonzero / (dense_mb * 1e6 / 4) * 100:.0f} % of "
        f"the table, so sparsity saves little, and {len(near)} of the {len(gr.ranked) - 1} other rows sit within "
        f"{RES} of the best, so its lead over them is not resolved by the model. On the RTX cluster {short(g1)} is "
        f"the best cell ({gr.step(g1):.1f} ms, {x(gr.step(ddp) / gr.step(g1))} DDP), "
        f"{pct(gr.step(g2) / gr.step(g1) - 1)} ahead of {short(g2)} ({gr.step(g2):.1f} ms) and "
        f"{pct(gr.step(e2d) / gr.step(g1) - 1)} ahead of embrace-2d ({gr.step(e2d):.1f} ms, "
        f"{pct(1 - gr.step(e2d) / gr.step('embrace/fifo'))} over embrace/fifo, {gr.step('embrace/fifo'):.1f}): "
        f"EmbRace's AlltoAlls, sharing each node's one NIC among its 4 GPUs, take {ck_e['comm_ms']['alltoall']:.1f} ms "
        f"a step and {ck_e['exposed_ms']:.1f} ms of its step is exposed on the slowest GPU, while allgather has no "
        f"forward exchange and {gr.exposed('allgather/embrace-2d'):.1f} ms of its step is exposed. Without "
        f"interference embrace-2d is still behind allgather/2D ({e0['step_ms']:.1f} vs {a0['step_ms']:.1f} ms, "
        f"{e0['exposed_ms']:.1f} and {a0['exposed_ms']:.1f} ms exposed; before the NIC share, 2026-12-03, the order "
        "flipped there): the exposed AlltoAll sets the gap, not the interference stretch "
        f"({stretch(runs, 'gnmt rtx allgather/embrace-2d'):.1f} ms for allgather, "
        f"{stretch(runs, 'gnmt rtx embrace/embrace-2d'):.1f} for embrace-2d). fsdp is second-last on RTX 3090s "
        f"({gr.step('fsdp/fifo'):.1f} ms; {short(gr.ranked[-1])}"
        + (", which exposes the whole dense AllReduce after the backward," if gr.ranked[-1] == "s2reducer/fifo" else "")
        + f" is last at {gr.step(gr.ranked[-1]):.1f}): the root unit (everything that is no repeated block: "
        + listing(gm["fsdp_root_layers"]) + f", {root:.0f} M of the {gm['params_m']:.0f} M parameters) is gathered "
        f"over the 100 Gb/s NIC before every forward, {gr.exposed('fsdp/fifo'):.1f} ms exposed. On 128 H100s all "
        f"{len(hs)} rows span {pct(max(hs) / min(hs) - 1)}: " + order(gh, gh.ranked) + " ms; "
        + (listing([short(k) for k in beyond]) + (" is" if len(beyond) == 1 else " are")
           + f" more than {RES} behind the best (above {gh.step(gh.first) * (1 + RESOLUTION):.1f} ms), so the order "
           "of the rest is not resolved." if beyond else f"every row is within {RES} of the best: no order is resolved.")
        + f" fsdp computes less than DDP: without interference it is {fs0['step_ms']:.1f} ms against DDP's "
        f"{dd0['step_ms']:.1f} (its per-tensor Adam on 1/128 of each tensor takes {fs0['compute_by_kind_ms']['update']:.1f} "
        f"ms on the slowest GPU instead of {dd0['compute_by_kind_ms']['update']:.1f}, and it has no apex bucket "
        f"passes, {passes:.1f} ms), but its all-gathers and reduce-scatters are in flight for "
        f"{sum(fs['comm_ms'].values()):.1f} ms per step ({sum(dd['comm_ms'].values()):.1f} ms for DDP's AllReduces), "
        f"so the interference stretches its compute by {stretch(runs, 'gnmt h100 fsdp/fifo'):.1f} ms (DDP's by "
        f"{stretch(runs, 'gnmt h100 allreduce/fifo'):.1f}).")
    return lstm + "\n\n" + gnmt + "\n"


def distopt() -> str:
    R, H = "pcie-rtx3090", "dgx-h100"
    d = "distopt/fifo"
    h = {mo: cell(mo, H) for mo in ("transformer-wmt", "bert-base")}
    need(all(c.first == d for c in h.values()), "distopt/fifo is first on transformer-wmt and bert-base / H100s")
    need(all(min(c.rows, key=c.compute) == d for c in h.values()), "distopt's compute reading is its matrix's lowest there")
    r = {mo: cell(mo, R) for mo in MODELS}
    need(r["bert-base"].ranked[-1] == d, "distopt/fifo is last on bert-base / RTX 3090s")
    between = [mo for mo in MODELS if r[mo].step("fsdp/fifo") < r[mo].step(d) < r[mo].step("allreduce/fifo")]
    ahead = [mo for mo in MODELS if r[mo].step(d) < min(r[mo].step("fsdp/fifo"), r[mo].step("allreduce/fifo"))]
    h_txt = "; ".join(
        f"{mo}: compute reading {c.compute(d):.1f} ms (DDP {c.compute('allreduce/fifo'):.1f}), step {c.step(d):.2f} ms, "
        f"{pct(c.step('allreduce/fifo') / c.step(d) - 1)} ahead of DDP's {c.step('allreduce/fifo'):.2f} "
        f"({resolved_word(c.step('allreduce/fifo') / c.step(d) - 1)})" for mo, c in h.items())
    bb = r["bert-base"]
    return (
        "distopt in the matrices: on 128 H100s its compute reading (step minus exposed communication) is the lowest "
        f"of its matrix on transformer-wmt and bert-base, which puts it first on both ({h_txt}). On 16 RTX 3090s, "
        "behind one 100 Gb/s NIC per node, more of its communication is exposed (bert-base "
        f"{bb.exposed(d):.1f} ms against DDP's {bb.exposed('allreduce/fifo'):.1f}): last on bert-base "
        f"({bb.step(d):.2f} ms)"
        + (", between fsdp and DDP on " + listing([f"{mo} ({r[mo].step(d):.2f})" for mo in between]) if between else "")
        + (", ahead of both on " + listing([f"{mo} ({r[mo].step(d):.2f}, {ordinal(r[mo].rank(d))})" for mo in ahead])
           if ahead else "") + ".\n")


def scaling_prose() -> str:
    ck = checks()["runs"]
    out = []
    for model in ("lstm-lm1b", "gnmt"):
        series = scaling(model)
        line = "; ".join(f"{k.split('/')[0] if k != 'embrace/embrace-2d' else 'embrace-2d'} "
                         + " / ".join(f"{v[g]:.1f}" for g in SCALING_GPUS) for k, v in series.items())
        out.append(f"{model} step time (ms) at {' / '.join(map(str, SCALING_GPUS))} GPUs: {line}.")
    lstm, gnmt = scaling("lstm-lm1b"), scaling("gnmt")
    gpus = sorted(lstm["allreduce/fifo"])
    growth = lambda s: s[max(s)] / s[min(s)] - 1  # noqa: E731
    ps = lstm["ps/fifo"]
    fs, ddp = lstm["fsdp/fifo"], lstm["allreduce/fifo"]
    behind = [g for g in gpus if fs[g] > ddp[g]]
    need(behind and all(fs[g] > ddp[g] for g in gpus if g >= behind[0]), "fsdp falls behind DDP from one count on")
    need(fs[max(gpus)] < lstm["allgather/fifo"][max(gpus)], "fsdp stays ahead of allgather at 1024 GPUs")
    top = max(gpus)
    fast = lambda ser, g: min(ser, key=lambda k: ser[k][g])  # noqa: E731
    lfirst = {fast(lstm, g) for g in gpus}
    need(lfirst == {"embrace/embrace-2d"}, "embrace-2d is the fastest plotted lstm-lm1b series at every count")
    gfirst = [(g, fast(gnmt, g)) for g in gpus]
    runs_ = []
    for g, k in gfirst:
        if runs_ and runs_[-1][2] == k:
            runs_[-1][1] = g
        else:
            runs_.append([g, g, k])
    gtxt = ", ".join(f"{short(k)} at {a}" + (f"–{b}" if b != a else "") + " GPUs" for a, b, k in runs_)
    e2 = gnmt["embrace/embrace-2d"]
    ddp_g = gnmt["allreduce/fifo"]
    below = [g for g in gpus if e2[g] < ddp_g[g]]
    out.append(
        "AllGather's volume grows as (N−1)·U·(4D+8). PS grows because every node pushes its hottest rows to the one "
        "server that holds the first partition: its load grows with N while the mean stays flat (local aggregation "
        "sends each node's union once, so it grows far slower than with per-GPU pushes: 23.2 → 246.9 ms before "
        f"local aggregation, branch s3-rank; {ps[min(gpus)]:.1f} → {ps[top]:.1f} ms now). fsdp grows because its ring "
        "all-gathers and reduce-scatters pay the ring step floor on every one of their N−1 steps: on lstm-lm1b its "
        f"all-gathers take {ck['lstm-lm1b 1024 h100 fsdp/fifo']['comm_ms']['all_gather']:.1f} ms per step at {top} GPUs "
        f"(17.7 ms before the floor, main a671bac), it falls behind DDP from {behind[0]} GPUs on "
        f"({fs[behind[0]]:.1f} vs {ddp[behind[0]]:.1f} ms) but stays ahead of allgather at {top} "
        f"({fs[top]:.1f} vs {lstm['allgather/fifo'][top]:.1f} ms). EmbRace's id AllGather is a ring too and grows "
        f"with N ({ck['lstm-lm1b 1024 h100 embrace/fifo']['comm_ms']['all_gather']:.1f} ms per step at {top} GPUs, 2.7 "
        f"before the floor; embrace {growth(lstm['embrace/fifo']) * 100:+.0f} % from {min(gpus)} to {top} GPUs on "
        "lstm-lm1b); embrace-2d, which exchanges the ids a step ahead, grows least of the sparse strategies: "
        f"{growth(lstm['embrace/embrace-2d']) * 100:+.0f} % ({growth(e2) * 100:+.0f} % for gnmt). Part of every "
        "series' growth is the GPU speed variation: the step waits for the expected slowest of N GPUs "
        "(`engine/gpu_speed.py`'s order-statistic factors). Among the six plotted series, on gnmt the fastest is "
        f"{gtxt}; embrace-2d is below DDP at "
        + (f"{below[0]}–{below[-1]}" if below else "no") + " GPUs (DDP "
        + span([(ddp_g[g] / e2[g] - 1) * 100 for g in below], '{:.1f}') + " % slower there), gaps the model does "
        "not resolve. On lstm-lm1b embrace-2d is first of the six at every count. Rows the plot leaves out: "
        "distopt/fifo and ps/embrace-2d (the 128-GPU matrix above: distopt is the gnmt / H100s matrix's "
        f"{ordinal(cell('gnmt', 'dgx-h100').rank('distopt/fifo'))}, ps/2D its {ordinal(cell('gnmt', 'dgx-h100').rank('ps/embrace-2d'))}).")
    return "\n\n".join(out) + "\n"


@lru_cache(None)     # read once: several blocks quote it
def _validation() -> dict:
    """The headlines docs/validation.md (generated by `python -m embsim.validate.docs`) prints."""
    text = Path("docs/validation.md").read_text()
    sections = [s.split("\n## ")[0] for s in re.split(r"\n### ", text)]
    mean = lambda name: float(re.search(r"mean \*\*([\d.]+)%\*\*", next(s for s in sections if s.startswith(name))).group(1))  # noqa: E731
    curves = re.search(r"all curves: \|simulated/measured - 1\| mean ([\d.]+)%, max ([\d.]+)%", text)
    training = re.search(r"mean \|error\| \*\*([\d.]+)%\*\*, max \|error\| \*\*([\d.]+)%\*\* over (\d+) runs", text)

    def spread(name):
        sec = next(s for s in sections if s.startswith(name))
        errs = [float(v) for v in re.findall(r"\| ([+-][\d.]+)% \|", sec)]
        return max(errs) - min(errs)
    return {"curves": (float(curves.group(1)), float(curves.group(2))),
            "training": (float(training.group(1)), float(training.group(2)), int(training.group(3))),
            "p5": [mean(f"ext-aws-p5-16x8-{c}") for c in ("all-gather", "alltoall", "all-reduce")],
            "2080ti": [mean(f"autodl-2x2080ti-p2poff-{c}") for c in ("all-reduce", "all-gather")],
            "gloo": {m: spread(f"cpu-gloo-{m}.yaml") for m in ("bert-base", "tiny-lm")}}


def trust() -> str:
    v = _validation()
    need(abs(v["training"][0] / 100 - RESOLUTION) < 0.0005, "embsim.compare's TRAINING_MEAN_ERROR is validation.md's training mean")
    return (
        "**How far to trust a ranking.** The simulator's validation (docs/validation.md) puts its published training "
        f"throughputs at a mean |simulated/measured − 1| of {v['training'][0]:.1f} % (max {v['training'][1]:.1f} %, "
        f"{v['training'][2]} runs) and its collective curves at {v['curves'][0]:.1f} % mean (max {v['curves'][1]:.1f} %; "
        "`embsim validate --nccl-tests`). The curves nearest the H100 cluster (AWS p5, 16 nodes of 8 H100s) are "
        f"{span(v['p5'], '{:.1f}')} % off on average (AllGather, AlltoAll, AllReduce); no RTX 3090 run and no 16-GPU "
        "PCIe cluster is among the validation sets (the nearest collective curves, two RTX 2080 Ti without "
        f"peer-to-peer, are {span(v['2080ti'], '{:.0f}')} % off on AllReduce and AllGather). The only measured comparison "
        "of strategies on one setup, the CPU/gloo traces, puts allreduce, allgather and embrace within "
        f"{v['gloo']['bert-base']:.1f} (bert-base) and {v['gloo']['tiny-lm']:.1f} (tiny-lm) percentage points of each "
        f"other's error. So this page calls a ranking **not resolved by the model** where the steps differ by less "
        f"than {RES}: the mechanism behind such a gap is what the simulator does, but the order itself could flip on "
        f"real hardware. `results_figures.py` prints, per cell, how many rows sit within {RES} of the best.\n")


BLOCKS = {"trust": trust, "distopt": distopt, "claims": claims, "landing": landing, "scaling-prose": scaling_prose}


def render() -> dict[str, str]:
    return {name: fn() for name, fn in BLOCKS.items()}


def main() -> None:
    check = "--check" in sys.argv[1:]
    blocks = render()
    text = PAGE.read_text()
    stale = []
    for name, body in blocks.items():
        start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
        if start not in text:
            raise SystemExit(f"{PAGE} has no {start} marker: put the block where it belongs first")
        if f"{start}\n\n{body}\n{end}" not in text:
            stale.append(name)
        if not check:
            replace_marked_block(PAGE, start, end, body)
    if check and stale:
        raise SystemExit(f"{PAGE}: blocks not what the committed data give: {', '.join(stale)} "
                         "(run .venv/bin/python benchmarks/results_claims.py)")
    print(f"{PAGE}: {'checked' if check else 'rewrote'} {', '.join(blocks)}"
          + (f" (changed: {', '.join(stale)})" if stale and not check else ""))


if __name__ == "__main__":
    main()

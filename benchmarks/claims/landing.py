"""The per-model paragraphs of "Where the simulated speedups land" (<!-- landing:start/end -->):
lstm-lm1b, where the dense table's AllReduce makes every sparse row faster, and gnmt, which is
compute-bound, so most of its order is within the model's resolution; each with the runs from
checks.json (no interference, compute by kind) that say which mechanism sets a gap."""

from __future__ import annotations

from .data import cell, cell_key, checks, mech, union_share
from .judging import RES, RESOLUTION, need, resolved_word
from .words import listing, order, pct, short, span, x

R, H = "pcie-rtx3090", "dgx-h100"
DDP = "allreduce/fifo"


def stretch(runs: dict, base: str) -> float:
    """Compute the interference adds: the run's compute minus its compute without it."""
    return runs[base]["compute_ms"] - runs[f"{base}, interference 0"]["compute_ms"]


def table_size(model_info: dict) -> str:
    """A model's (first) table as the page writes it: "793k × 1024"."""
    table = model_info["tables"][0]
    return f"{table[1] // 1000}k × {table[2]}"


def landing() -> str:
    return lstm_paragraph() + "\n\n" + gnmt_paragraph() + "\n"


def lstm_paragraph() -> str:
    ck = checks()
    runs, lm = ck["runs"], ck["models"]["lstm-lm1b"]
    lr, lh = cell("lstm-lm1b", R), cell("lstm-lm1b", H)
    allreduce_gb = mech()["s2reducer"][cell_key("lstm-lm1b", R)]["allreduce"]["embedding_mb"] / 1e3
    no_int = lambda mo, s: runs[f"{mo} rtx {s}/fifo, interference 0"]["compute_ms"]  # noqa: E731
    sparse = lr.sparse_rows()
    fifo_sparse = sorted((k for k in sparse if k.endswith("/fifo")), key=lr.step)
    second = lr.ranked[1]
    lead = lr.step(second) / lr.step(lr.first) - 1
    e2d, ef = lr.step("embrace/embrace-2d"), lr.step("embrace/fifo")
    need(abs(e2d / ef - 1) < 0.01, "embrace-2d is level with embrace/fifo on lstm-lm1b / RTX 3090s at 64 MB")
    sent = {s: lr.rows[f"{s}/fifo"]["comm_bytes_per_gpu_total"] / 1e6 for s in ("embrace", "s2reducer", "ps")}
    need(max(sent, key=sent.get) == "embrace", "EmbRace sends the most of embrace, s2reducer and ps")
    c32 = {r["run"]: r["step_time_ms"] for r in mech()["ablation_credit32"][cell_key("lstm-lm1b", R)]["rows"]}
    need(lr.step("allgather/embrace-2d") < lr.step("allgather/fifo"), "2D helps allgather on lstm-lm1b / RTX 3090s")
    h_second = lh.ranked[1]
    h_lead = lh.step(h_second) / lh.step(lh.first) - 1
    return (
        f"**lstm-lm1b** ({table_size(lm)} table, {lm['params_m'] - lm['embedding_m']:.0f} M "
        "dense parameters). On 16 RTX 3090s behind one 100 Gb/s NIC per node, the dense table's AllReduce "
        f"({allreduce_gb:.0f} GB per GPU per step) makes DDP "
        f"{lr.step(DDP):.1f} ms; fsdp moves the same table as a reduce-scatter and an all-gather "
        f"({lr.step('fsdp/fifo'):.1f} ms: no bucket copies and 1/16 of AdaGrad's update, "
        f"{no_int('lstm-lm1b', 'allreduce') - no_int('lstm-lm1b', 'fsdp'):.1f} ms less compute than DDP without "
        f"interference, but {lr.exposed('fsdp/fifo'):.0f} ms of its step exposed). Every sparse row is "
        f"{span([lr.step(DDP) / lr.step(k) for k in sparse], '{:.1f}')}× faster and the ranking under fifo is "
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


def gnmt_paragraph() -> str:
    ck = checks()
    runs, gm = ck["runs"], ck["models"]["gnmt"]
    gr, gh = cell("gnmt", R), cell("gnmt", H)
    rtx_comp = [gr.compute(k) for k in gr.rows]
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
    return (
        f"**gnmt** ({table_size(gm)} shared table, {gm['params_m']:.0f} M parameters). "
        f"Compute-bound ({span(rtx_comp, '{:.0f}')} ms of a {span([gr.step(k) for k in gr.rows], '{:.0f}')} ms step "
        f"on RTX 3090s); the union of touched rows over 16 GPUs is {union_share('gnmt', R):.0f} % of "
        f"the table, so sparsity saves little, and {len(near)} of the {len(gr.ranked) - 1} other rows sit within "
        f"{RES} of the best, so its lead over them is not resolved by the model. On the RTX cluster {short(g1)} is "
        f"the best cell ({gr.step(g1):.1f} ms, {x(gr.step(DDP) / gr.step(g1))} DDP), "
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

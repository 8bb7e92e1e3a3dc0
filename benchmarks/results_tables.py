"""Render docs/results/*.json (from results_matrix.sh) as the "Full matrices" section of
docs/results.md, between the markers <!-- matrices:start --> and <!-- matrices:end -->,
and the compute-source lines they ran with, verbatim, between <!-- sources:start --> and
<!-- sources:end --> at the top, so the page's tables are always what the commands
printed. Run from the repository root:

    .venv/bin/python benchmarks/results_tables.py
"""

from __future__ import annotations

import json
from pathlib import Path

from docblock import replace_marked_block

MODELS = ("lstm-lm1b", "gnmt", "transformer-wmt", "bert-base")
CLUSTERS = ("pcie-rtx3090", "dgx-h100")
START, END = "<!-- matrices:start -->", "<!-- matrices:end -->"
SOURCES = "<!-- sources:start -->", "<!-- sources:end -->"


def table(model: str, cluster: str, data: dict) -> str:
    lines = [f"#### {model} on {cluster}", "",
             "| rank | strategy/scheduler | step (ms) | speedup | exposed comm (ms) | sent per GPU (MB) "
             "| memory per GPU (GB) | fits |", "|---|---|---|---|---|---|---|---|"]
    refused: dict[str, list[str]] = {}
    rank = 0
    for r in data["rows"]:
        if r.get("refused"):
            refused.setdefault(_reason(r["refused"]), []).append(f"{r['strategy']}/{r['scheduler']}")
            continue
        rank += 1
        lines.append(f"| {rank} | {r['strategy']}/{r['scheduler']} | {r['step_time_ms']:.2f} | "
                     f"{r['speedup']:.2f}× | {r['exposed_comm_ms']:.2f} | {r['comm_bytes_per_gpu_total'] / 1e6:.1f} | "
                     f"{r['memory_per_gpu_bytes'] / 1e9:.2f} | {'yes' if r['fits_in_memory'] else '**no**'} |")
    lines += ["", f"Compute times: `{data['compute_source']}`."]
    for reason, combos in refused.items():
        lines += ["", f"Refused: {', '.join(combos)}: {reason}."]
    if data.get("why"):
        lines += ["", f"Why: {data['why']}."]
    slower = data.get("slower_than_fifo", [])
    if slower:
        lines += [""] + [f"- slower than fifo: {line}" for line in slower]
    lines += ["", f"![{model} on {cluster}](results/{model}_{cluster}.png)", ""]
    return "\n".join(lines)


def _reason(text: str) -> str:
    """The refusal's reason without its leading '--scheduler X with --strategy Y: ', so
    the combinations refused for one reason share a line."""
    return text.split(": ", 1)[1] if text.startswith("--scheduler ") and ": " in text else text


def sources(cells: dict) -> str:
    """Each distinct compute-source line, verbatim, with the cells that ran with it."""
    by_source: dict[str, list[str]] = {}
    for (model, cluster), data in cells.items():
        by_source.setdefault(data["compute_source"], []).append(f"{model} on {cluster}")
    return "\n".join(f"- {', '.join(keys)}: `{source}`" for source, keys in by_source.items()) + "\n"


def main() -> None:
    cells = {(m, c): json.loads(Path(f"docs/results/{m}_{c}.json").read_text()) for c in CLUSTERS for m in MODELS}
    parts = [table(m, c, data) for (m, c), data in cells.items()]
    replace_marked_block(Path("docs/results.md"), START, END, "\n".join(parts))
    replace_marked_block(Path("docs/results.md"), *SOURCES, sources(cells))


if __name__ == "__main__":
    main()

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
conditions checked as the blocks are computed: where the data no longer support a word, the
script stops with the condition that failed instead of printing a claim the tables
contradict, and the sentence has to be rewritten in benchmarks/claims/, which holds the
blocks (one module each, the claims table's rows by paper) and what they share. Run from the
repository root after the other results scripts:

    .venv/bin/python benchmarks/results_claims.py           # rewrite the blocks
    .venv/bin/python benchmarks/results_claims.py --check   # exit 1 if the page differs
"""

from __future__ import annotations

import sys
from pathlib import Path

from claims.distopt import distopt
from claims.landing import landing
from claims.scaling_prose import scaling_prose
from claims.table import claims_table
from claims.trust import trust
from docblock import replace_marked_block

PAGE = Path("docs/results.md")
BLOCKS = {"trust": trust, "distopt": distopt, "claims": claims_table, "landing": landing, "scaling-prose": scaling_prose}


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

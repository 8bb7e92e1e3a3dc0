"""The papers' claims table (<!-- claims:start/end -->): a header, Zen's density row, whose
figure a test asserts rather than a JSON file, and the rows the other modules compute, in the
page's order."""

from __future__ import annotations

from . import embrace_rows, s2reducer_rows
from .priority_row import priority_row
from .ps import ps_row

HEADER = ("| claim (source) | verdict | why |", "|---|---|---|")

# Zen: density (a test's figure, not a JSON one)
ZEN_ROW = ("| LSTM-LM1B embedding-gradient density 1.13 % per GPU batch (Zen, Table 1) | **reproduced** "
           "(1.14 %, `tests/workload/test_row_touches.py` asserts it) | 8,192 *distinct* log-uniform "
           "candidates plus the batch's 2,560 tokens; candidates drawn with repeats gave 0.71 %. Not fitted: "
           "falls out of TensorFlow's sampler. Neither the compute nor the collective model touches it. |")


def claims_table() -> str:
    rows = [*HEADER, ZEN_ROW,
            s2reducer_rows.bytes_row(), s2reducer_rows.speedup_row(), s2reducer_rows.accuracy_row(),
            embrace_rows.embrace_2d_row(), embrace_rows.overlap_row(), embrace_rows.embrace_241_row(),
            embrace_rows.embrace_3066_row(), embrace_rows.dense_models_row(),
            priority_row(), ps_row()]
    return "\n".join(rows) + "\n"

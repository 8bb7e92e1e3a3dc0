"""strategies.common.column_split_note: shard=cols on more GPUs than a table has columns, or
on a count that does not divide its width (a probe ran 500 dim-16 tables on 512 GPUs:
0.03 of a column each, with nothing said)."""

import json
from types import SimpleNamespace

from embsim.cli import main
from embsim.strategies.common import column_split_note


def _tables(*dims):
    return [SimpleNamespace(dim=d) for d in dims]


def test_whole_columns_need_no_note():
    assert column_split_note(_tables(128, 64), 8) is None
    assert column_split_note(_tables(16), 1) is None


def test_fewer_columns_than_gpus_and_uneven_splits_are_named():
    note = column_split_note(_tables(16, 16, 128), 64)
    assert "2 table(s) of dim 16 have fewer columns than the 64 GPUs" in note
    assert "0.25 of a column each" in note and "shard=rows, hashed or tables" in note
    uneven = column_split_note(_tables(128), 24)
    assert "dim 128 does not divide by 24" in uneven and "up to 12% slower" in uneven


def test_the_note_reaches_simulate(capsys):
    assert main(["simulate", "--topology", "dgx-h100:3x8", "--model", "dlrm-criteo-t3",
                 "--strategy", "embrace", "--iterations", "2", "--json"]) == 0

    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any("dim 128 does not divide by 24" in n for n in notes)

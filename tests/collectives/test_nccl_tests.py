"""collectives/nccl_tests.py: the simulated sweep. One rank still times NCCL's copy (busbw 0,
time not), and says so in the row's note."""

from embsim.collectives import CollectiveModel
from embsim.collectives import nccl_tests as nt
from embsim.collectives.busbw import OPS
from embsim.topology import load_topology


def test_one_rank_rows_time_the_copy_not_zero():
    """probe: `nccl-tests --topology dgx-h100:1x1` printed 0.00 µs for every size."""
    from embsim.collectives.busbw import busbw_factor
    model = CollectiveModel(load_topology("dgx-h100:1x1"))
    for op in OPS:
        rows = nt.run(model, op, [8, 1 << 20, 1 << 28])
        assert all(r.time_us > 0 for r in rows), op
        # busbw by nccl-tests' own factor: 0 for all_reduce's (n-1)/n, algbw for broadcast's 1
        assert all(r.busbw == r.algbw * busbw_factor(op, 1) for r in rows), op
        assert rows[0].time_us < rows[1].time_us < rows[2].time_us
        assert all(r.note.startswith("one rank: NCCL copies the send buffer") for r in rows)
    table = nt.format_table(nt.run(model, "all_reduce", [8, 1 << 20]))
    assert table.count("# one rank:") == 1                      # one note for the rows alike
    assert nt.rows_json(rows)[0]["note"] == rows[0].note


def test_two_ranks_are_unchanged_and_carry_no_note():
    rows = nt.run(CollectiveModel(load_topology("dgx-h100:1x2")), "all_reduce", [1 << 20])
    assert rows[0].note == "" and "note" not in nt.rows_json(rows)[0] and rows[0].busbw > 0

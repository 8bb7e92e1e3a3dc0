"""nccl-tests stdout parsing: the published layouts, and the logs that must be refused."""

from pathlib import Path

import pytest

from embsim.collectives.busbw import busbw_factor
from embsim.imports import (NcclTestsLogError, load_nccl_tests_log, parse_nccl_tests_log,
                            with_rank_count)

FIXTURES = Path(__file__).parent / "fixtures"


def test_modern_two_node_all_reduce():
    (run,) = load_nccl_tests_log(FIXTURES / "h100-2x8-all_reduce.log")
    assert run.op == "all_reduce" and run.ranks == 16
    assert run.hosts == ("node-a", "node-b") and run.n_nodes == 2 and run.gpus_per_node == 8
    assert run.nccl_version == "2.26.2" and run.tests_version == "2.17.1"
    assert run.params["nGpus"] == "1" and run.params["iters"] == "20"
    assert [r.size for r in run.rows] == [4 ** k for k in range(5, 14)]
    row = run.rows[-1]
    assert row.count * 4 == row.size and row.redop == "sum" and row.root == -1
    ip = row.in_place
    # busbw as printed equals algbw x the op's factor for the rank count read from the header
    assert ip.busbw == pytest.approx(ip.algbw * busbw_factor("all_reduce", 16), rel=0.01)
    assert ip.time_s == pytest.approx(row.size / ip.algbw, rel=0.01)
    assert row.out_of_place.time_s < ip.time_s


def test_old_layout_without_root_redop_group():
    (run,) = load_nccl_tests_log(FIXTURES / "all_gather_perf-a100-old.log")
    assert run.op == "all_gather" and run.op_from.startswith("the file name")
    assert run.ranks == 8 and run.hosts == ("dgx01",) and run.nccl_version is None
    assert all(r.in_place.wrong is None for r in run.rows)     # 'error' column, not a count
    assert run.rows[0].count * 4 * 8 == run.rows[0].size


def test_launcher_prefix_and_stripped_hashes():
    (run,) = load_nccl_tests_log(FIXTURES / "tagged-output.log")
    assert run.op == "alltoall" and run.ranks == 8 and run.nccl_version == "2.21.5"
    assert len(run.rows) == 9 and run.avg_busbw == pytest.approx(150.2e9)


def test_rows_with_wrong_values_are_dropped():
    (run,) = load_nccl_tests_log(FIXTURES / "out-of-bounds.log")
    assert run.out_of_bounds == 3 and 65536 not in [r.size for r in run.rows]
    assert len(run.dropped) == 1 and "3 wrong values" in run.dropped[0]


def test_interleaved_logs_are_rejected():
    with pytest.raises(NcclTestsLogError, match="interleaved"):
        load_nccl_tests_log(FIXTURES / "interleaved.log")


def test_a_run_cut_off_mid_row_scores_its_complete_rows():
    """truncated.log stops inside its sixth row: the five complete rows are read, the cut
    one left out, and the run says it ended early."""
    (run,) = load_nccl_tests_log(FIXTURES / "truncated.log")
    assert [r.size for r in run.rows] == [1024, 4096, 16384, 65536, 262144]
    assert run.avg_busbw is None
    (note,) = run.notes
    assert "ends before '# Avg bus bandwidth'" in note and "line 32 cut short" in note
    assert "5 complete row(s) are used" in note


def test_log_without_footer_keeps_its_rows_and_says_so():
    text = (FIXTURES / "h100-2x8-all_reduce.log").read_text()
    cut = text[:text.index("# Out of bounds")]
    (run,) = parse_nccl_tests_log(cut, "cut.log")
    (whole,) = parse_nccl_tests_log(text, "whole.log")
    assert run.rows == whole.rows and not whole.notes
    assert "the run did not finish" in run.notes[0]
    # a short row with more of the table after it is corruption, not a cut-off run
    lines = text.splitlines()
    at = next(i for i, l in enumerate(lines) if l.strip().startswith("65536"))
    lines[at] = lines[at][:60]
    with pytest.raises(NcclTestsLogError, match="row has 6 fields"):
        parse_nccl_tests_log("\n".join(lines), "x.log")
    # no complete row at all: refused
    header_only = text[:text.index("        1024")]
    with pytest.raises(NcclTestsLogError, match="truncated log.*no complete row"):
        parse_nccl_tests_log(header_only, "cut.log")


def test_not_a_log_and_unknown_op():
    with pytest.raises(NcclTestsLogError, match="not an nccl-tests log"):
        parse_nccl_tests_log("hello\nworld\n", "x.log")
    text = (FIXTURES / "tagged-output.log").read_text().replace("alltoall_perf", "a2a")
    with pytest.raises(NcclTestsLogError, match="cannot tell which collective"):
        parse_nccl_tests_log(text, "x.log")
    (run,) = parse_nccl_tests_log(text, "x.log", op="alltoall")
    assert run.op == "alltoall"


def test_rank_lines_the_table_contradicts_are_read_as_cut_short():
    """Ranks 0-7 of a 16-rank AllReduce (busbw/algbw 1.875): a list cut short, not 8 ranks."""
    text = (FIXTURES / "h100-2x8-all_reduce.log").read_text()
    kept = [l for l in text.splitlines() if not any(f"Rank {r:2d} " in l for r in range(8, 16))]
    (run,) = parse_nccl_tests_log("\n".join(kept), "x.log")
    assert not run.complete and run.ranks == 0 and run.listed_ranks == tuple(range(8))
    assert with_rank_count(run, 16, "s").ranks == 16


def test_rank_lines_past_the_tables_own_count_are_rejected():
    """An AlltoAll whose counts fix 8 ranks but whose rank lines name rank 9: merged wrongly."""
    text = (FIXTURES / "tagged-output.log").read_text()
    text = text.replace("Rank  7 Group  0 Pid    907", "Rank  9 Group  0 Pid    907")
    with pytest.raises(NcclTestsLogError, match="names rank 9 but the table's counts give 8 ranks"):
        parse_nccl_tests_log(text, "x.log")


def test_several_runs_in_one_file():
    a = (FIXTURES / "h100-2x8-all_reduce.log").read_text()
    b = (FIXTURES / "tagged-output.log").read_text()
    runs = parse_nccl_tests_log(a + "\nsome shell noise\n" + b, "both.log")
    assert [(r.op, r.ranks) for r in runs] == [("all_reduce", 16), ("alltoall", 8)]


def test_root_na_is_no_root():
    """A row whose root column says N/A (a rootless op) reads as root -1; found by the fuzz
    session (it raised TypeError before)."""
    log = """# Collective test starting: all_reduce_perf
# nThread 1 nGpus 1 minBytes 1024 maxBytes 134217728 step: 4(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#  Rank  0 Group  0 Pid   4000 on     node-a device  0 [0x07] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid   4001 on     node-a device  1 [0x17] NVIDIA H100 80GB HBM3
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
    16777216       4194304     float     sum     N/A   811.43   20.68   20.68       0   819.55   20.47   20.47       0
# Avg bus bandwidth    : 20.5
"""
    run = parse_nccl_tests_log(log, "na.log")[0]
    assert run.rows[0].root == -1 and run.rows[0].size == 16777216


@pytest.mark.parametrize("old, new, words", [
    # int() of these raised a bare ValueError (not a number, or past 4300 digits)
    ("nThread 1 nGpus 1 ", "nThread 1 nGpus abc ", ["nGpus 'abc'", "1..64"]),
    ("nThread 1 nGpus 1 ", "nThread 1 nGpus 0 ", ["nGpus '0'", "1..64"]),
    ("nThread 1 nGpus 1 ", "nThread 1 nGpus " + "1" * 5000 + " ", ["nGpus", "1..64"]),
    ("Rank 15 Group", "Rank " + "1" * 5000 + " Group", ["rank", "5,000 digits"]),
])
def test_header_integers_are_checked(tmp_path, old, new, words):
    text = (FIXTURES / "h100-2x8-all_reduce.log").read_text()
    assert old in text
    path = tmp_path / "x.log"
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(NcclTestsLogError) as info:
        load_nccl_tests_log(path)
    message = str(info.value)
    assert str(path) in message and "\n" not in message
    for w in words:
        assert w in message, (w, message)


def test_gpus_per_process_comes_from_the_header():
    (run,) = load_nccl_tests_log(FIXTURES / "h100-2x8-all_reduce.log")
    assert run.gpus_per_process == 1


def test_unknown_op_override_names_the_flag():
    # import-nccl-tests --op junk said "op 'junk'", from deep in the busbw factors
    with pytest.raises(NcclTestsLogError, match="^--op 'junk': known ops are all_reduce"):
        load_nccl_tests_log(FIXTURES / "h100-2x8-all_reduce.log", op="junk")
    (run,) = load_nccl_tests_log(FIXTURES / "h100-2x8-all_reduce.log", op="allreduce")
    assert run.op == "all_reduce"


def _without_rank_lines(name: str, keep=()) -> str:
    """A fixture as people paste it: rank lines left out, or cut to the first few."""
    lines = (FIXTURES / name).read_text().splitlines()
    kept = [l for l in lines if " Rank " not in l or any(f"Rank {r:2d} " in l or f"Rank  {r} " in l
                                                         for r in keep)]
    return "\n".join(kept) + "\n"


def test_a_log_without_rank_lines_waits_for_its_system():
    (run,) = parse_nccl_tests_log(_without_rank_lines("h100-2x8-all_reduce.log"), "x.log")
    assert not run.complete and run.ranks == 0 and run.devices == () and run.hosts == ()
    named = with_rank_count(run, 16, "--topology dgx-h100:2x8")
    assert named.ranks == 16 and named.rows == run.rows
    # busbw/algbw = 1.875 is AllReduce on 16 ranks, not 8
    with pytest.raises(NcclTestsLogError, match="dgx-h100:1x8's 8 GPUs and the table disagree"):
        with_rank_count(run, 8, "--topology dgx-h100:1x8")


def test_an_elided_rank_list_keeps_what_it_shows():
    (run,) = parse_nccl_tests_log(_without_rank_lines("h100-2x8-all_reduce.log", keep=range(4)),
                                  "x.log")
    assert run.listed_ranks == (0, 1, 2, 3) and not run.complete
    assert run.devices == ("NVIDIA H100 80GB HBM3",) * 4
    assert with_rank_count(run, 16, "s").ranks == 16
    with pytest.raises(NcclTestsLogError, match="names rank 3 but s has 2 GPUs"):
        with_rank_count(run, 2, "s")


def test_per_rank_counts_give_the_rank_count_without_rank_lines():
    # AlltoAll prints each rank's count: size = count x 4 B x 8
    (run,) = parse_nccl_tests_log(_without_rank_lines("tagged-output.log"), "x.log")
    assert run.op == "alltoall" and run.ranks == 8 and not run.complete
    with pytest.raises(NcclTestsLogError, match="counts give 8 ranks but s has 16 GPUs"):
        with_rank_count(run, 16, "s")


@pytest.mark.parametrize("old, new, words", [
    ("NVIDIA H100 80GB HBM3", "AMD Instinct MI300X", "AMD device 'AMD Instinct MI300X'"),
    ("NCCL version 2.26.2+cuda12.8", "RCCL version 2.20.5+hip6.2", "rccl-tests / RCCL banner"),
])
def test_rccl_logs_are_refused(old, new, words):
    text = (FIXTURES / "h100-2x8-all_reduce.log").read_text()
    assert old in text
    with pytest.raises(NcclTestsLogError, match="an RCCL run") as info:
        parse_nccl_tests_log(text.replace(old, new), "x.log")
    assert words in str(info.value) and "NVIDIA's NCCL" in str(info.value)


def test_a_table_that_says_fewer_ranks_than_listed_is_rejected():
    """16 rank lines on an AllReduce whose busbw/algbw is 8 ranks' (1.75): merged wrongly,
    not cut short; the same for an AlltoAll whose counts give 8 ranks under 16 lines."""
    text = (FIXTURES / "h100-2x8-all_reduce.log").read_text()
    rows = [l for l in text.splitlines() if l.strip()[:1].isdigit()]
    for row in rows:
        f = row.split()
        f[7], f[11] = f"{float(f[6]) * 1.75:.2f}", f"{float(f[10]) * 1.75:.2f}"
        text = text.replace(row, "  ".join(f))
    with pytest.raises(NcclTestsLogError, match="the rank lines and the table disagree"):
        parse_nccl_tests_log(text, "x.log")
    a2a = (FIXTURES / "tagged-output.log").read_text()
    extra = "\n".join(f"[1,0]<stdout>: Rank {r:2d} Group  0 Pid    9{r:02d} on   hgx-08 device  {r - 8} "
                      f"[0x07] NVIDIA H100 80GB HBM3" for r in range(8, 16))
    a2a = a2a.replace("[1,0]<stdout>:host:900:950", extra + "\n[1,0]<stdout>:host:900:950")
    with pytest.raises(NcclTestsLogError, match="16 rank lines but the table's counts give 8 ranks"):
        parse_nccl_tests_log(a2a, "x.log")


# Real logs from systems the project had not seen (probe of 2026-12-05): what they print.
_A2A_HEAD = """# nThread 1 nGpus 1 minBytes 1 maxBytes 1048576 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#  Rank  0 Group  0 Pid   4000 on     node-a device  0 [0x07] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid   4001 on     node-a device  1 [0x17] NVIDIA H100 80GB HBM3
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
"""
_A2A_ROWS = """           0             0     float    none      -1     0.16    0.00    0.00      0     0.15    0.00    0.00    N/A
     1048576        131072     float    none      -1    20.00   52.43   26.21      0    20.00   52.43   26.21      0
"""
_FOOTER = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 26.2\n"


def test_zero_byte_rows_are_left_out_not_refused():
    """alltoall/all_gather/reduce_scatter print '0 0 float none -1' rows whenever -b is below
    ranks x element: the most common command line."""
    (run,) = parse_nccl_tests_log(_A2A_HEAD + _A2A_ROWS + _FOOTER, "alltoall_perf.log")
    assert [r.size for r in run.rows] == [1048576] and run.ranks == 2
    assert run.dropped == ("line 6: size 0: a launch with no data",)


@pytest.mark.parametrize("name, op", [
    ("run1_alltoall_perf.log", "alltoall"),      # no \b between "_" and "alltoall"
    ("v100_all_gather_perf.out", "all_gather"),
    ("v100-2x2_alltoall.log", "alltoall"),        # the op alone names it too
    ("reduce_scatter.txt", "reduce_scatter"),
])
def test_the_op_is_read_from_ordinary_file_names(name, op):
    (run,) = parse_nccl_tests_log(_A2A_HEAD + _A2A_ROWS + _FOOTER, name)
    assert run.op == op and run.op_from == f"the file name {name!r}"


def test_two_ops_in_a_file_name_name_neither():
    with pytest.raises(NcclTestsLogError, match="cannot tell which collective"):
        parse_nccl_tests_log(_A2A_HEAD + _A2A_ROWS + _FOOTER, "alltoall_vs_all_gather.log")


def test_an_rccl_log_is_refused_as_rccl_before_its_rows_are_read():
    log = "# rccl-tests version 2.17.9\n" + _A2A_HEAD.replace("NVIDIA H100 80GB HBM3", "AMD Radeon Graphics")
    with pytest.raises(NcclTestsLogError, match="an RCCL run"):
        parse_nccl_tests_log(log + "  7 0 float none -1 x\n" + _FOOTER, "alltoall_perf.log")


def test_a_pasted_table_without_its_header_line_or_footer_parses():
    """Pasted from the column header down (and often not to the footer): the rows as far as
    they go; no rank lines, so the caller names the system."""
    table = _A2A_HEAD.split("\n", 3)[3]
    (run,) = parse_nccl_tests_log("some words\n" + table + _A2A_ROWS, "alltoall_perf.log")
    assert not run.complete and [r.size for r in run.rows] == [1048576]
    assert with_rank_count(run, 2, "--topology dgx-h100:1x2").ranks == 2


def test_one_rank_is_refused_not_divided_by():
    """busbw is 0 for one rank: it crashed with ZeroDivisionError in validate."""
    head = _A2A_HEAD.replace("#  Rank  1 Group  0 Pid   4001 on     node-a device  1 [0x17] NVIDIA H100 80GB HBM3\n", "")
    rows = "     1048576        262144     float    none      -1    20.00   52.43    0.00      0    20.00   52.43    0.00      0\n"
    with pytest.raises(NcclTestsLogError, match="one rank: nothing crosses a link"):
        parse_nccl_tests_log(head + rows + _FOOTER, "alltoall_perf.log")
    table = head.split("\n", 2)[2]
    (run,) = parse_nccl_tests_log(table + rows + _FOOTER, "alltoall_perf.log")
    with pytest.raises(NcclTestsLogError, match="has one GPU"):
        with_rank_count(run, 1, "--topology dgx-h100:1x1")


def test_two_ranks_on_one_gpu_are_refused():
    log = _A2A_HEAD.replace("device  1 [0x17]", "device  0 [0x07]")
    with pytest.raises(NcclTestsLogError, match="ranks 0 and 1 run on one GPU"):
        parse_nccl_tests_log(log + _A2A_ROWS + _FOOTER, "alltoall_perf.log")


def test_a_failed_run_says_so():
    crash = "node-a: Test CUDA failure common.cu:389 'an illegal memory access was encountered'\n"
    with pytest.raises(NcclTestsLogError, match="the run failed: Test CUDA failure common.cu:389"):
        parse_nccl_tests_log(_A2A_HEAD + _A2A_ROWS + crash, "alltoall_perf.log")


def test_pdsh_prefixes_are_stripped():
    text = "".join(f"node01: {line}\n" for line in (_A2A_HEAD + _A2A_ROWS + _FOOTER).splitlines())
    (run,) = parse_nccl_tests_log(text, "alltoall_perf.log")
    assert run.ranks == 2 and [r.size for r in run.rows] == [1048576]


def test_a_gzipped_log_is_named_as_such(tmp_path):
    import gzip
    path = tmp_path / "all_reduce_perf.log.gz"
    path.write_bytes(gzip.compress(b"# nThread 1\n"))
    with pytest.raises(NcclTestsLogError, match="gzip-compressed"):
        load_nccl_tests_log(path)

"""The import commands end to end through the CLI."""

from pathlib import Path

import pytest

from embsim.cli import main
from embsim.trace import load_trace

FIXTURES = Path(__file__).parent / "fixtures"


def test_import_nccl_tests_writes_measured_curves(tmp_path, capsys):
    out = tmp_path / "net.yaml"
    rc = main(["import-nccl-tests", str(FIXTURES / "h100-2x8-all_reduce.log"),
               "--out", str(out), "--topology", "dgx-h100:2x8"])
    assert rc == 0
    trace = load_trace(out)
    assert trace.topology == "dgx-h100" and trace.provenance.backend == "nccl"
    curve = trace.collective("all_reduce", 16)
    assert curve is not None and curve.sizes[0] == 1024
    # in-place time of the last row, as printed (us)
    last = [l for l in (FIXTURES / "h100-2x8-all_reduce.log").read_text().splitlines()
            if l.strip().startswith("67108864")][0].split()
    assert curve.median_s[-1] == pytest.approx(float(last[9]) * 1e-6)


def test_logs_of_two_nccl_releases_are_not_one_trace(tmp_path, capsys):
    """A trace is one machine's: its provenance has one NCCL version and one device list."""
    out = tmp_path / "net.yaml"
    rc = main(["import-nccl-tests", str(FIXTURES / "h100-2x8-all_reduce.log"),
               str(FIXTURES / "tagged-output.log"), "--out", str(out), "--topology", "dgx-h100:2x8"])
    err = capsys.readouterr().err
    assert rc == 2 and "NCCL version 2.21.5" in err and "import them separately" in err
    assert err.count("\n") == 1 and not out.exists()


def test_import_nccl_tests_bad_log_exits_2(tmp_path, capsys):
    text = (FIXTURES / "truncated.log").read_text()
    header_only = tmp_path / "header-only.log"
    header_only.write_text(text[:text.index("        1024")])
    rc = main(["import-nccl-tests", str(header_only), "--out", str(tmp_path / "x.yaml")])
    assert rc == 2 and "truncated" in capsys.readouterr().err
    assert not (tmp_path / "x.yaml").exists()


def test_import_nccl_tests_says_a_run_was_cut_off(tmp_path, capsys):
    """A run cut off mid-table: its complete rows become the curve, and a note says so."""
    rc = main(["import-nccl-tests", str(FIXTURES / "truncated.log"), "--out", str(tmp_path / "x.yaml")])
    captured = capsys.readouterr()
    assert rc == 0 and "5 sizes" in captured.out
    assert "the log ends before '# Avg bus bandwidth'" in captured.err


def test_import_profile_requires_the_profiled_machine(tmp_path, capsys):
    from embsim.cli import main
    profile = tmp_path / "p.json"
    profile.write_text('{"traceEvents": []}')
    assert main(["import-profile", str(profile), "--model", "tiny-lm",
                 "--out", str(tmp_path / "t.yaml")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--topology" in err
    assert main(["import-profile", str(profile), "--model", "tiny-lm", "--topology", "nope",
                 "--out", str(tmp_path / "t.yaml")]) == 2
    assert not (tmp_path / "t.yaml").exists()


@pytest.mark.parametrize("argv", [
    ["import-nccl-tests", str(FIXTURES / "h100-2x8-all_reduce.log")],
    ["import-profile", str(FIXTURES / "h100-2x8-all_reduce.log"), "--model", "tiny-lm",
     "--topology", "local-cpu"],
])
def test_imports_never_overwrite_without_force(tmp_path, capsys, argv):
    out = tmp_path / "mine.yaml"
    out.write_text("a user's file\n")
    assert main(argv + ["--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--force" in err and str(out) in err
    assert out.read_text() == "a user's file\n"


def test_import_nccl_tests_force_overwrites(tmp_path):
    out = tmp_path / "net.yaml"
    out.write_text("old\n")
    assert main(["import-nccl-tests", str(FIXTURES / "h100-2x8-all_reduce.log"), "--out", str(out),
                 "--force"]) == 0
    assert load_trace(out).collective("all_reduce", 16) is not None


def test_import_nccl_tests_without_rank_lines_needs_the_system(tmp_path, capsys):
    text = (FIXTURES / "h100-2x8-all_reduce.log").read_text()
    log = tmp_path / "all_reduce_perf.log"
    log.write_text("\n".join(l for l in text.splitlines() if " Rank " not in l) + "\n")
    out = tmp_path / "net.yaml"
    assert main(["import-nccl-tests", str(log), "--out", str(out)]) == 2
    assert "--topology" in capsys.readouterr().err and not out.exists()
    assert main(["import-nccl-tests", str(log), "--out", str(out), "--topology", "dgx-h100:2x8"]) == 0
    trace = load_trace(out)
    assert trace.collective("all_reduce", 16) is not None and trace.provenance.nodes == 2


def test_rows_left_out_of_an_import_are_named(tmp_path, capsys):
    """A row with wrong values (or of 0 bytes) does not become a curve point, and says so."""
    out = tmp_path / "net.yaml"
    assert main(["import-nccl-tests", str(FIXTURES / "out-of-bounds.log"), "--out", str(out),
                 "--topology", "dgx-h100:2x8"]) == 0
    assert "left out line 29: size 65536: 3 wrong values" in capsys.readouterr().err

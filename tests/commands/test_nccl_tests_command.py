"""`embsim nccl-tests` (commands/nccl_tests.py): the header counts its ranks in words."""

from embsim.cli import main


def test_one_gpu_header_and_note(capsys):
    assert main(["nccl-tests", "--topology", "dgx-h100:1x1", "-b", "8", "-e", "1M", "-f", "1024"]) == 0
    out = capsys.readouterr().out
    assert "on dgx-h100:1x1, 1 rank, NCCL" in out and "1 ranks" not in out
    assert "# one rank: NCCL copies the send buffer to the receive buffer" in out
    rows = [line.split() for line in out.splitlines() if not line.startswith("#")]
    assert all(float(r[5]) > 0 for r in rows)                   # the time column

"""busbw.canonical_op: the op names people write read as nccl-tests' own."""

import pytest

from embsim.cli import main
from embsim.collectives.busbw import OPS, canonical_op


@pytest.mark.parametrize("written, op", [
    ("AllReduce", "all_reduce"), ("all-reduce", "all_reduce"), ("allreduce", "all_reduce"),
    ("all_reduce_perf", "all_reduce"), ("ReduceScatter", "reduce_scatter"), ("ALL_GATHER", "all_gather"),
    ("all_to_all", "alltoall"), ("AllToAll", "alltoall"), ("all2all", "alltoall"),
    ("send_recv", "sendrecv"), ("broadcast_perf", "broadcast"), ("Reduce", "reduce")])
def test_spellings_read_as_the_op(written, op):
    assert canonical_op(written) == op


def test_every_op_is_its_own_name_and_unknown_names_pass_through():
    assert all(canonical_op(op) == op for op in OPS)
    assert canonical_op("hypercube") == "hypercube"


def test_validation_file_and_cli_take_the_spellings(tmp_path, capsys):
    from embsim.collectives.validation import DATA_DIR
    text = (DATA_DIR / "azure-nd-h100-v5-allreduce.yaml").read_text()
    assert "\nop: all_reduce\n" in text
    f = tmp_path / "curve.yaml"
    f.write_text(text.replace("\nop: all_reduce\n", "\nop: AllReduce\n"))
    assert main(["validate", "--nccl-tests", str(f)]) == 0
    assert main(["nccl-tests", "--op", "All-Gather", "-b", "1M", "-e", "1M"]) == 0
    assert "all_gather on" in capsys.readouterr().out
    f.write_text(text.replace("\nop: all_reduce\n", "\nop: hypercube\n"))
    assert main(["validate", "--nccl-tests", str(f)]) == 2
    assert "unknown op 'hypercube'" in capsys.readouterr().err

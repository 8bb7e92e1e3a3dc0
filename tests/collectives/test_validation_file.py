"""collectives/validation_file.py: a nccl-tests validation file of one GPU on one node is
refused in one line (it crashed `validate --nccl-tests` dividing by its busbw of 0)."""

import pytest

from embsim.cli import main


@pytest.mark.parametrize("op", ["all_reduce", "broadcast"])
def test_one_rank_file_is_refused_by_key(tmp_path, capsys, op):
    path = tmp_path / "one.yaml"
    path.write_text(f"system: one H100\npreset: dgx-h100\nnodes: 1\ngpus_per_node: 1\nop: {op}\n"
                    f"nccl: '2.21.5'\nbusbw:\n  1048576: 0\n")
    assert main(["validate", "--nccl-tests", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("embsim: error:") and str(path) in err and "gpus_per_node" in err
    assert "one rank" in err and err.count("\n") == 1 and "Traceback" not in err

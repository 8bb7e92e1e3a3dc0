"""NCCL settings that take a measured run off the modelled path are refused, naming the
setting; channel-count settings are noted; a command line's settings reach the model."""

import json
from pathlib import Path

import pytest

from embsim.cli import main
from embsim.collectives.nccl_transport import (UnmodelledTransport, noted_settings,
                                               refuse_unmodelled, unmodelled_transport)
from embsim.topology import load_topology

LOG = Path(__file__).parents[1] / "imports" / "fixtures" / "h100-2x8-all_reduce.log"


@pytest.mark.parametrize("text, spec, refused", [
    ("mpirun -x NCCL_IB_DISABLE=1 ./build/all_reduce_perf", "l40s-roce:2x1", True),
    ("mpirun -x NCCL_IB_DISABLE=1 ./build/all_reduce_perf", "l40s-roce:1x2", False),   # one node: no network
    ("NCCL_IB_DISABLE=0", "dgx-h100:2x8", False),
    ("NCCL_NET=Socket", "dgx-h100:2x8", True),
    ("NCCL INFO NCCL_P2P_DISABLE set by environment to 1", "dgx-h100:1x8", True),
    ("NCCL_P2P_DISABLE=1", "pcie-rtx4090:1x2", False),     # P2P off already: SHM either way
    ("NCCL_P2P_LEVEL=LOC", "dgx-a100:1x8", True),
    ("NCCL_P2P_LEVEL=NVL", "dgx-a100:1x8", False),
    ("NCCL_SHM_DISABLE=1", "pcie-rtx4090:1x2", True),      # P2P off: SHM was the path
    ("NCCL_SHM_DISABLE=1", "dgx-h100:1x8", False),
    # P2P allowed, but NCCL's level (PXB on Intel) stages the hops between switches: SHM in use
    ("NCCL_SHM_DISABLE=1", "pcie-rtx3090:1x8", True),
    ("NCCL_P2P_DISABLE=1", "dgx-h100:1x1", False),         # one GPU a node: no peer
])
def test_a_transport_switch_counts_where_its_path_is_used(text, spec, refused):
    topo = load_topology(spec)
    assert bool(unmodelled_transport(text, topo)) is refused
    if refused:
        with pytest.raises(UnmodelledTransport, match=r"^run\.log: the run set NCCL_"):
            refuse_unmodelled(text, topo, "run.log")


def test_channel_settings_are_noted_not_refused():
    assert noted_settings("NCCL_MIN_NCHANNELS=4 NCCL_DEBUG=INFO") == \
        "NCCL_MIN_NCHANNELS=4 set by the run: NCCL's default stands in"
    assert noted_settings("NCCL_BUFFSIZE=8388608") == ""


def _log_with(tmp_path, command: str, name: str = "all_reduce_perf.log") -> Path:
    path = tmp_path / name
    path.write_text(command + "\n" + LOG.read_text())
    return path


def test_a_named_log_on_sockets_is_refused_in_one_line(tmp_path, capsys):
    log = _log_with(tmp_path, "mpirun -np 16 -x NCCL_IB_DISABLE=1 ./build/all_reduce_perf -b 1K -e 128M -f 4")
    assert main(["validate", "--nccl-tests", str(log)]) == 2
    err = capsys.readouterr().err
    assert "NCCL_IB_DISABLE=1 (NCCL's TCP socket transport" in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_folders_log_on_sockets_is_left_out_with_a_note(tmp_path, capsys):
    _log_with(tmp_path, "mpirun -x NCCL_IB_DISABLE=1 ./build/all_reduce_perf", "a.log")
    _log_with(tmp_path, "mpirun ./build/all_reduce_perf", "b.log")
    assert main(["validate", "--nccl-tests", str(tmp_path)]) == 0
    out = capsys.readouterr()
    assert "a.log (run at line" in out.err and "left out" in out.err
    assert "b.log" in out.out and "a.log" not in out.out


def test_a_command_lines_algorithm_reaches_the_model(tmp_path, capsys):
    # NCCL_ALGO on the command line, with no NCCL INFO line to repeat it, was ignored
    plain = _log_with(tmp_path, "mpirun ./build/all_reduce_perf", "plain.log")
    ring = _log_with(tmp_path, "NCCL_ALGO=Ring mpirun ./build/all_reduce_perf", "ring.log")
    assert main(["validate", "--nccl-tests", str(plain), str(ring), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    algos = {name: {r["algo"] for r in rows if r["curve"].startswith(name)} for name in ("plain", "ring")}
    assert algos["ring"] == {"Ring"} and algos["plain"] != {"Ring"}

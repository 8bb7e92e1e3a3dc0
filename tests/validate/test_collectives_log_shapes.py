"""`embsim validate --nccl-tests` on real logs an outside probe found misread (probe T): the
log's node shape, a device embsim does not know, a net plugin's NCCL_PROTO, folders with a
log that cannot be scored. Fixtures: tests/imports/fixtures (trimmed published logs; see
tests/imports/test_nccl_tests_log_formats.py), plus
  metax-c500-1x8-all_reduce.log          MetaX mccl-tests output (8x C500, -d bfloat16)
  azure-nd96amsr-2x8-allreduce-headeronly.log  Azure HPC "Example perf values" (pasted table)
  mi100-rccl-1x2-allreduce.log           rccl-tests output from a ROCm issue thread (2x MI100)
"""

import shutil
from pathlib import Path

from embsim.cli import main
from embsim.imports import load_nccl_tests_log
from embsim.validate import run_errors
from embsim.validate.collectives import topology_for_run

FIXTURES = Path(__file__).parent.parent / "imports" / "fixtures"
H100_2X4 = str(FIXTURES / "h100-2x4-all_reduce.log")


def _curve_line(out: str) -> str:
    return out.splitlines()[0]


def test_a_two_node_log_runs_on_two_nodes_of_an_eight_gpu_board():
    """8 ranks on dgx-06 and dgx-07, 4 each: dgx-h100's own shape has 8 GPUs too, but one node."""
    (run,) = load_nccl_tests_log(H100_2X4)
    assert (run.n_nodes, run.gpus_per_node) == (2, 4)
    for spec in ("dgx-h100", "dgx-h100:2x4"):
        topo, _ = topology_for_run(spec, run)
        assert (topo.n_nodes, topo.gpus_per_node) == (2, 4)
    inferred = run_errors(run, "dgx-h100", inferred="inferred")
    shaped = run_errors(run, "dgx-h100:2x4")
    assert [p.simulated_busbw for p in inferred.points] == [p.simulated_busbw for p in shaped.points]
    # NVLS is one node's NVSwitch: across two nodes it is not what runs
    assert not any(p.algo.startswith("NVLS") for p in shaped.points)


def test_an_explicit_shape_is_used_as_given_and_the_contradiction_said(capsys):
    assert main(["validate", "--nccl-tests", H100_2X4, "--topology", "dgx-h100:1x8"]) == 0
    as_given = capsys.readouterr().out
    assert "the log's ranks are on 2 nodes; --topology dgx-h100:1x8 simulates 1" in _curve_line(as_given)
    assert main(["validate", "--nccl-tests", H100_2X4]) == 0
    auto = capsys.readouterr().out
    assert "simulates 1" not in auto and as_given.splitlines()[1:] != auto.splitlines()[1:]
    assert main(["validate", "--nccl-tests", H100_2X4, "--topology", "dgx-h100:2x4"]) == 0
    shaped = capsys.readouterr().out
    assert "simulates" not in shaped and shaped.splitlines()[1:] == auto.splitlines()[1:]


def test_a_device_embsim_does_not_know_is_named_as_not_the_topologys(capsys):
    metax = str(FIXTURES / "metax-c500-1x8-all_reduce.log")
    assert main(["validate", "--nccl-tests", metax, "--topology", "dgx-a100:1x8"]) == 0
    line = _curve_line(capsys.readouterr().out)
    assert "the log's device 'MetaX C500' (one embsim does not know) is not this topology's GPU" in line
    # a known family keeps its note; the same family none
    assert main(["validate", "--nccl-tests", H100_2X4, "--topology", "dgx-a100"]) == 0
    assert "'NVIDIA H100 80GB HBM3' is not this topology's GPU (A100" in capsys.readouterr().out
    assert main(["validate", "--nccl-tests", H100_2X4, "--topology", "dgx-h100"]) == 0
    assert "is not this topology's GPU" not in capsys.readouterr().out


def test_a_net_plugins_nccl_proto_is_applied_and_said(capsys):
    log = str(FIXTURES / "t4-efa-2x1-all_reduce-ofi.log")
    assert main(["validate", "--nccl-tests", log, "--topology", "pcie-a10:2x1"]) == 0
    out = capsys.readouterr().out
    assert "NCCL_PROTO=simple set for the run (its log): the model is held to it" in _curve_line(out)
    protos = {line.split()[-1].split("/")[1] for line in out.splitlines()[2:]
              if line.strip()[:1].isdigit()}
    assert protos == {"Simple"}


def test_a_cut_off_run_is_scored_and_says_it_ended_early(capsys, tmp_path):
    text = Path(H100_2X4).read_text()
    cut = tmp_path / "h100-cut.log"
    cut.write_text(text[:text.index("# Out of bounds")])
    assert main(["validate", "--nccl-tests", str(cut)]) == 0
    assert "the log ends before '# Avg bus bandwidth'" in capsys.readouterr().out
    cut.write_text(text[:text.index("     1048576")])
    assert main(["validate", "--nccl-tests", str(cut)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no complete row" in err


def test_a_folder_goes_on_past_a_log_it_cannot_score(capsys, tmp_path):
    """A pasted table with no rank lines (needs --topology) and an RCCL log beside a good one:
    each is left out with one line, the good one scored; none scored: exit 2."""
    bad = ["azure-nd96amsr-2x8-allreduce-headeronly.log", "mi100-rccl-1x2-allreduce.log"]
    for name in bad + ["h100-2x4-all_reduce.log"]:
        shutil.copy(FIXTURES / name, tmp_path / name)
    assert main(["validate", "--nccl-tests", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "h100-2x4-all_reduce.log" in captured.out and "all curves" in captured.out
    notes = captured.err.strip().splitlines()
    assert len(notes) == 2 and all(n.startswith("embsim: note: ") and n.endswith("; left out") for n in notes)
    assert "no '# Rank' lines" in notes[0] and "an RCCL run" in notes[1]
    (tmp_path / "h100-2x4-all_reduce.log").unlink()
    assert main(["validate", "--nccl-tests", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and err[-1].startswith("embsim: error: validate: no nccl-tests run to score")
    # named on its own, a log that cannot be scored is still the command's error
    assert main(["validate", "--nccl-tests", str(tmp_path / bad[1])]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    # a bad --topology is one error, not a note per file
    assert main(["validate", "--nccl-tests", str(tmp_path), "--topology", "no-such-preset"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_a_rack_scale_presets_node_is_its_nvlink_domain_not_a_host():
    """A GB200 NVL72 log lists 18 trays of 4 GPUs; the preset's node is the whole rack's
    NVLink domain, so its hosts do not reshape it (nor call for the node-count note)."""
    from embsim.imports import parse_nccl_tests_log
    ranks = "\n".join(f"#  Rank {r:2d} Group  0 Pid {1000 + r} on tray-{r // 4:02d} device {r % 4} "
                      f"[0x{r:02x}] NVIDIA GB200" for r in range(72))
    log = ("# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1048576 step: 2(factor) warmup iters: 5 "
           "iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n" + ranks + "\n#\n"
           "#       size         count      type   redop    root     time   algbw   busbw #wrong"
           "     time   algbw   busbw #wrong\n"
           "     1048576        262144     float     sum      -1    100.0   10.49   20.69      0"
           "    100.0   10.49   20.69      0\n"
           "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 20.69\n")
    (run,) = parse_nccl_tests_log(log, "gb200.log")
    assert (run.ranks, run.n_nodes) == (72, 18)
    topo, _ = topology_for_run("gb200-nvl72", run)
    assert (topo.n_nodes, topo.gpus_per_node) == (1, 72)
    curve = run_errors(run, "gb200-nvl72")
    assert "simulates" not in curve.system and "on 18 node(s)" in curve.system

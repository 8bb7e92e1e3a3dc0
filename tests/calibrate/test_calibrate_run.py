"""End-to-end `embsim calibrate --quick` with 2 gloo ranks, and interrupted runs."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from embsim.calibrate.config import CalibrateConfig
from embsim.calibrate.launch import run_calibration
from embsim.errors import InputError
from embsim.topology.parse import load_node_type
from embsim.trace import load_trace

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def quick_trace(tmp_path_factory, calibrated):
    d = tmp_path_factory.mktemp("cal")
    cfg = CalibrateConfig(model="tiny-lm", batch=4, seq=16, world=2, backend="gloo", quick=True,
                          out=str(d / "t.yaml"), topology_out=str(d / "local-cpu.yaml"),
                          command="test")
    return load_trace(calibrated(cfg)), d


def test_quick_trace_is_complete(quick_trace):
    trace, d = quick_trace
    assert trace.device == "cpu" and trace.provenance.world == 2
    assert trace.provenance.backend == "gloo" and trace.provenance.label == "CPU"
    assert len(trace.batches) >= 2                   # batch scaling for interpolation
    kinds = {lt.kind for lt in trace.layers.values()}
    assert "embedding" in kinds
    assert any(lt.variant == "sparse-grad" for lt in trace.layers.values())
    for lt in trace.layers.values():
        for p in lt.points:
            assert p.fwd_s > 0 and p.bwd_s > 0, lt.name
    assert {o.name for o in trace.optimizer} == {"dense", "sparse-rows"}
    ops = {c.op for c in trace.collectives}
    assert ops == {"all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast"}
    for c in trace.collectives:
        assert c.sizes[0] == 1024 and all(t > 0 for t in c.median_s)
    assert set(trace.steps) == {"allreduce", "allgather", "embrace"}
    for s in trace.steps.values():
        assert s.samples_s and all(t > 0 for t in s.samples_s)
    assert all(s.untied_outputs for s in trace.steps.values())    # LanguageModel unties
    timed = {lt.name: lt.timed for lt in trace.layers.values()}
    assert timed["embedding" if "embedding" in timed else "word_embedding"] == "in-step"
    assert any(t == "isolated" for t in timed.values())            # the sparse-grad lookup
    f = trace.interference
    assert f is not None and f.alone_s > 0 and f.comm_s > 0 and f.both_s > 0 and f.factor >= 0
    assert trace.rank_skew is not None and trace.rank_skew.factor >= 1.0
    ts = trace.token_stats[0]
    assert ts.ranks == 2 and max(ts.unique_per_rank) <= ts.union <= sum(ts.unique_per_rank)


def test_host_topology_embedded_written_and_loadable(quick_trace):
    trace, d = quick_trace
    if trace.host_topology is None:
        # a quick sweep on a loaded machine can leave no usable link fit: then nothing
        # about the host is made up (tests/trace/test_embedded_topology.py covers embedding)
        assert trace.topology == "" and not (d / "local-cpu.yaml").exists()
        return
    assert trace.topology.startswith("calibrated-") and "-cpu-" in trace.topology
    assert trace.host_topology is not None and trace.host_topology["name"] == trace.topology
    node = load_node_type(d / "local-cpu.yaml")            # the --topology-out copy
    embedded = load_node_type(d / "t.yaml")                # the trace as a topology file
    assert (node.gpu, node.fabric, node.nics) == (embedded.gpu, embedded.fabric, embedded.nics)
    assert node.fabric.kind == "host" and node.gpu.count == 2
    assert node.fabric.host_gbps > 0 and node.fabric.host_latency_us >= 0
    assert node.fabric.interference == pytest.approx(trace.interference.compute_factor, abs=1e-4)
    assert node.fabric.comm_interference == pytest.approx(trace.interference.comm_factor, abs=1e-4)


def test_the_trace_alone_is_a_starting_point(quick_trace, capsys):
    """No other flag: the trace's model, embedded machine, batch and seq."""
    from embsim.cli import main
    trace, d = quick_trace
    args = ["simulate", "--trace", str(d / "t.yaml"), "--json"]
    if trace.host_topology is None:              # no usable link fit (see above)
        assert main(args) == 2
        assert "give --topology" in capsys.readouterr().err
        args += ["--topology", "local-cpu"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "extrapolated" not in out and (trace.host_topology is None or '"preset": "calibrated-' in out)


def test_existing_outputs_are_never_overwritten_unasked(tmp_path):
    out = tmp_path / "t.yaml"
    out.write_text("old trace\n")
    cfg = CalibrateConfig(world=2, backend="gloo", quick=True, out=str(out))
    with pytest.raises(InputError, match="exists.*--force"):
        run_calibration(cfg)
    topo = tmp_path / "topo.yaml"
    topo.write_text("old topology\n")
    cfg = CalibrateConfig(world=2, backend="gloo", quick=True, out=str(tmp_path / "new.yaml"),
                          topology_out=str(topo))
    with pytest.raises(InputError, match="--topology-out .*exists"):
        run_calibration(cfg)
    assert out.read_text() == "old trace\n" and topo.read_text() == "old topology\n"


def test_without_torch_one_line_exit_2():
    code = ("import sys; sys.modules['torch'] = None\n"
            "from embsim.cli import main; sys.exit(main(['calibrate', '--quick']))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("embsim: error: calibrate runs real PyTorch kernels and needs "
                                   "torch: pip install 'embsim[calibrate]'")


def test_failing_rank_leaves_old_trace(tmp_path):
    out = tmp_path / "t.yaml"
    out.write_text("old trace\n")
    corpus = tmp_path / "short.txt"
    corpus.write_text("too few words\n")             # every rank raises reading it
    cfg = CalibrateConfig(batch=2, seq=16, world=2, backend="gloo", quick=True, corpus=str(corpus),
                          out=str(out), topology_out=str(tmp_path / "topo.yaml"), force=True)
    with pytest.raises(InputError, match="calibration failed on rank"):
        run_calibration(cfg)
    assert out.read_text() == "old trace\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["short.txt", "t.yaml"]


def test_sigint_leaves_old_trace(tmp_path):
    out = tmp_path / "t.yaml"
    out.write_text("old trace\n")
    code = ("import sys; from embsim.commands.calibrate import command; "
            "command.main(sys.argv[1:])")
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "--backend", "gloo", "--world", "2", "--batch", "4",
         "--seq", "16", "--out", str(out), "--topology-out", str(tmp_path / "topo.yaml"),
         "--force"],
        cwd=ROOT, stderr=subprocess.PIPE, text=True, start_new_session=True)
    # Wait until the ranks are measuring, then interrupt the whole group as Ctrl-C does.
    deadline = time.time() + 60
    line = ""
    while "layer" not in line and time.time() < deadline:
        line = proc.stderr.readline()
    os.killpg(proc.pid, signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert out.read_text() == "old trace\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.yaml"]


def test_unknown_model_is_refused_before_any_rank_starts(tmp_path, monkeypatch):
    """It was refused inside every spawned rank: a torch 'Terminating process' warning and
    'calibration failed on rank 1: ...' on stderr instead of one line."""
    import embsim.calibrate.launch as launch

    def no_spawn(*a, **k):
        raise AssertionError("a rank was started")
    monkeypatch.setattr(launch.mp, "start_processes", no_spawn)
    cfg = CalibrateConfig(model="nosuch", world=2, backend="gloo", quick=True, out=str(tmp_path / "t.yaml"))
    with pytest.raises(InputError, match="unknown model 'nosuch'"):
        run_calibration(cfg)
    with pytest.raises(InputError, match="--topology-out: empty"):
        run_calibration(CalibrateConfig(world=2, backend="gloo", out=str(tmp_path / "t.yaml"), topology_out=""))


def test_output_under_a_file_is_refused_before_measuring(tmp_path):
    blocker = tmp_path / "notes.txt"
    blocker.write_text("mine\n")
    cfg = CalibrateConfig(world=2, backend="gloo", quick=True, out=str(blocker / "t.yaml"), force=True)
    with pytest.raises(InputError, match="--out .*notes.txt is a file, not a folder"):
        run_calibration(cfg)
    assert blocker.read_text() == "mine\n"

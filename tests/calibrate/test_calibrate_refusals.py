"""What calibrate refuses before any rank starts, and how it ends when it cannot deliver:
blocks it cannot build as the zoo describes them (LLaMA's SwiGLU, GQA, RMSNorm), a
one-rank CPU world (0/0 in the link fit, after the whole run), an unwritable
destination (the whole run lost at the end), a requested --topology-out it could not
write (exit 0 and no file), and a rank killed by the OOM killer ("exited (-9)")."""

import errno
import os
from pathlib import Path

import pytest

pytest.importorskip("torch")
import embsim.calibrate.launch as launch  # noqa: E402
from embsim.calibrate import memory  # noqa: E402
from embsim.calibrate.config import CalibrateConfig  # noqa: E402
from embsim.calibrate.modules import build_layer, require_buildable, unbuilt_block_options  # noqa: E402
from embsim.calibrate.spec import LayerShape, ModelShape, TableShape, model_spec  # noqa: E402
from embsim.cli import main  # noqa: E402


@pytest.fixture
def no_spawn(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("a rank was started")
    monkeypatch.setattr(launch.mp, "start_processes", refuse)


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("embsim: error: ")
    return err[0]


@pytest.mark.parametrize("model, listed", [
    ("llama2-7b", "its swiglu FFN and rmsnorm are not built"),
    ("llama3-8b", "its swiglu FFN, grouped-query attention (kv_heads 8) and rmsnorm are not built"),
    ("nemotron-340b", "its grouped-query attention (kv_heads 8) is not built"),
])
def test_blocks_it_cannot_build_are_refused_up_front(model, listed, tmp_path, no_spawn, monkeypatch, capsys):
    # refused even where the memory check (which also builds every layer) is skipped
    monkeypatch.setattr(memory, "host_available_bytes", lambda: None)
    out = tmp_path / "t.yaml"
    assert main(["calibrate", "--model", model, "--quick", "--backend", "gloo", "--out", str(out)]) == 2
    line = one_error_line(capsys)
    assert line.startswith(f"embsim: error: --model {model}: calibrate builds PyTorch's ")
    assert listed in line and "would not be this model's" in line
    assert not out.exists()


@pytest.mark.parametrize("model", ["tiny-lm", "bert-base", "bert-large-squad", "gpt2", "mpt-125m",
                                   "nmt-iwslt", "transformer-wmt", "gnmt", "lstm-lm1b", "nemotron-8b"])
def test_models_it_builds_are_still_accepted(model):
    require_buildable(model_spec(model))


def test_block_options():
    base = {"dim": 16, "heads": 4, "ffn": 32}
    assert unbuilt_block_options(base) == []
    assert unbuilt_block_options({**base, "kv_heads": 4, "norm": "layernorm", "ffn_kind": "relu"}) == []
    assert unbuilt_block_options({**base, "kv_heads": 2, "ffn_kind": "swiglu", "norm": "rmsnorm"}) == [
        "swiglu FFN", "grouped-query attention (kv_heads 2)", "rmsnorm"]


def test_bias_false_is_built_without_biases():
    # nemotron's blocks: the zoo counts no GEMM biases, and neither does what calibrate builds
    model = ModelShape("m", {"w": TableShape("w", 10, 16)}, (), "test")
    block = build_layer(LayerShape("d", "transformer_decoder",
                                   {"dim": 16, "heads": 4, "ffn": 32, "bias": False}), model)
    assert not any(name.endswith("bias") for name, _ in block.named_parameters())
    with_bias = build_layer(LayerShape("d", "transformer_decoder", {"dim": 16, "heads": 4, "ffn": 32}), model)
    assert any(name.endswith("bias") for name, _ in with_bias.named_parameters())


def test_one_rank_on_cpu_is_refused_up_front(tmp_path, no_spawn, capsys):
    out = tmp_path / "w1.yaml"
    assert main(["calibrate", "--quick", "--world", "1", "--backend", "gloo", "--out", str(out)]) == 2
    line = one_error_line(capsys)
    assert "--world 1: a one-rank world has no collective to measure" in line and "2 or more" in line
    assert not out.exists()


def test_help_gives_the_cpu_minimum(capsys):
    assert main(["calibrate", "--help"]) == 0
    assert "at least 2 on CPU" in " ".join(capsys.readouterr().out.split())


def test_unusable_link_fit_with_topology_out_is_an_error(tmp_path, monkeypatch, capsys):
    out, topo = tmp_path / "t.yaml", tmp_path / "topo.yaml"

    def written_without_topology(cfg):
        Path(cfg.out).write_text("trace\n")
        raise launch.NoHostTopology(Path(cfg.out), "calibrate: the link fit is unusable (noise)")
    monkeypatch.setattr(launch, "run_calibration", written_without_topology)
    args = ["calibrate", "--quick", "--backend", "gloo", "--out", str(out)]
    assert main(args + ["--topology-out", str(topo)]) == 1
    captured = capsys.readouterr()
    assert captured.out.strip() == str(out) and out.read_text() == "trace\n"   # nothing lost
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"embsim: error: --topology-out {topo}: not written: ")
    assert "link fit is unusable" in err[0] and not topo.exists()
    # not asked for: the trace is still the answer, with a final warning
    assert main(args + ["--force"]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith(f"embsim: warning: {out} has no host topology: ")


def test_sigkill_reads_as_out_of_memory():
    msg = launch.exit_message(0, -9, None)
    assert msg == ("calibration failed: rank 0 was killed (SIGKILL), most likely out of memory; "
                   "try a smaller --batch")
    assert launch.exit_message(1, None, "SIGKILL").startswith("calibration failed: rank 1 was killed")
    assert launch.exit_message(1, 3, None) == "calibration failed: rank 1 exited (3)"


def test_unwritable_destination_is_refused_before_measuring(tmp_path, no_spawn, monkeypatch, capsys):
    def read_only(*a, **k):
        raise OSError(errno.EROFS, "Read-only file system")
    monkeypatch.setattr(launch.tempfile, "mkstemp", read_only)
    out = tmp_path / "t.yaml"
    assert main(["calibrate", "--quick", "--backend", "gloo", "--out", str(out)]) == 2
    assert one_error_line(capsys) == (f"embsim: error: --out {out}: cannot write in {tmp_path}: "
                                      "Read-only file system")
    assert list(tmp_path.iterdir()) == []


def test_a_missing_folder_is_refused_and_not_made(tmp_path, no_spawn, capsys):
    out = tmp_path / "new" / "t.yaml"
    assert main(["calibrate", "--quick", "--backend", "gloo", "--out", str(out)]) == 2
    assert "no folder" in one_error_line(capsys)
    assert not (tmp_path / "new").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_read_only_folder_is_refused(tmp_path, no_spawn):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        cfg = CalibrateConfig(world=2, backend="gloo", quick=True, out=str(tmp_path / "t.yaml"),
                              topology_out=str(ro / "topo.yaml"))
        with pytest.raises(launch.InputError, match="--topology-out .*: cannot write in .*ro: Permission denied"):
            launch.run_calibration(cfg)
    finally:
        ro.chmod(0o755)


def test_writability_probe_leaves_nothing(tmp_path):
    cfg = CalibrateConfig(world=2, backend="gloo", out=str(tmp_path / "t.yaml"),
                          topology_out=str(tmp_path / "topo.yaml"))
    launch.check_outputs(cfg)
    assert list(tmp_path.iterdir()) == []

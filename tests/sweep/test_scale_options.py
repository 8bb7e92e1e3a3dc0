"""`embsim scale` takes the trainer and NCCL flags of simulate/compare (--optimizer, --corpus,
--lengths, --padding, --nccl-env, --nccl-version): each reaches every point's SimulationConfig, and a bad
value is one line naming its flag, exit 2, before any point runs."""

from __future__ import annotations

import json

import pytest

from embsim.cli import main
from scale_capture import ScaleStopped, captured  # noqa: F401  (fixture)
from embsim.sweep.spec import config_hash

SCALE = ["scale", "--model", "tiny-lm", "--strategy", "allreduce", "--iterations", "2"]
FLAGS = ["--optimizer", "lamb", "--lengths", "squad-1.1", "--padding", "longest:8",
         "--nccl-env", "NCCL_BUFFSIZE=8388608", "--nccl-env", "NCCL_P2P_NET_CHUNKSIZE=0x40000",
         "--nccl-version", "2.21.5"]


def test_flags_reach_every_point(captured):
    with pytest.raises(ScaleStopped):
        main(SCALE + ["--gpus", "1,2,4"] + FLAGS)
    assert len(captured) == 3
    for p in captured:
        cfg = p.simulation_config()
        assert cfg.padding == "longest:8" and cfg.lengths == "squad-1.1" and cfg.corpus is None
        assert cfg.model_overrides == {"optimizer": {"name": "lamb"}}
        assert [tuple(x) for x in cfg.nccl_env] == [("NCCL_BUFFSIZE", 8388608),
                                                    ("NCCL_P2P_NET_CHUNKSIZE", 0x40000)]
        assert cfg.nccl_version == "2.21.5"
        # JSON-able (results.jsonl, Dask) and the hash survives the round trip (resume)
        assert config_hash(json.loads(json.dumps(p.config))) == p.hash


def test_without_the_flags_points_are_unchanged(captured):
    """No flag given: the same fields (and so the same hashes, i.e. an old --out resumes)
    as before the flags existed."""
    with pytest.raises(ScaleStopped):
        main(SCALE + ["--gpus", "1,2"])
    for p in captured:
        cfg = p.simulation_config()
        assert (cfg.padding, cfg.lengths, cfg.corpus, tuple(cfg.nccl_env), cfg.model_overrides,
                cfg.nccl_version) == (None, None, None, (), {}, None)
        old = {k: v for k, v in p.config.items()
               if k not in ("corpus", "lengths", "padding", "nccl_env", "nccl_version")}
        assert config_hash(old) == p.hash


def test_corpus_reaches_the_points(captured, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("a b c\n" * 50)
    with pytest.raises(ScaleStopped):
        main(SCALE + ["--gpus", "1,2", "--corpus", str(corpus), "--padding", "longest"])
    assert {p.config["corpus"] for p in captured} == {str(corpus)}


def test_grad_compress_reaches_the_points_and_keeps_old_hashes_without_it(captured):
    base = ["scale", "--model", "tiny-lm", "--strategy", "allreduce", "--iterations", "2", "--gpus", "1,2"]
    with pytest.raises(ScaleStopped):
        main(base + ["--grad-compress", "bf16"])
    with_flag = list(captured)
    captured.clear()
    with pytest.raises(ScaleStopped):
        main(base)
    without = list(captured)
    assert {p.simulation_config().grad_compress for p in with_flag} == {"bf16"}
    assert all("grad_compress" not in p.config for p in without)


def test_scale_point_runs_as_simulate_does(capsys):
    """A scale point with the flags is the simulate run with the same flags: same step time."""
    assert main(SCALE + ["--gpus", "2", "--json", "--workers", "1"] + FLAGS) == 0
    point = json.loads(capsys.readouterr().out)["points"][0]
    assert point["error"] is None
    assert "padding longest:8 of squad-1.1" in point["compute_source"]
    assert "NCCL_BUFFSIZE=8388608 NCCL_P2P_NET_CHUNKSIZE=262144" in point["compute_source"]
    assert main(["simulate", "--model", "tiny-lm", "--strategy", "allreduce", "--iterations", "2",
                 "--topology", point["topology"], "--json"] + FLAGS) == 0
    sim = json.loads(capsys.readouterr().out)
    assert sim["step_time_ms"] == point["step_time_ms"]     # same key, same unit, same bits


def test_optimizer_changes_the_step(capsys):
    times = {}
    for name in ("sgd", "lamb"):
        assert main(SCALE + ["--gpus", "1", "--json", "--workers", "1", "--optimizer", name]) == 0
        times[name] = json.loads(capsys.readouterr().out)["points"][0]["step_time_ms"]
    assert times["lamb"] > times["sgd"]


@pytest.mark.parametrize("args, flag", [
    (["--nccl-env", "NCCL_FOO=1"], "--nccl-env 'NCCL_FOO'"),
    (["--nccl-env", "NCCL_BUFFSIZE"], "--nccl-env 'NCCL_BUFFSIZE': expected NAME=BYTES"),
    (["--nccl-env", "NCCL_BUFFSIZE=3"], "--nccl-env NCCL_BUFFSIZE=3"),
    (["--padding", "zig"], "--padding 'zig'"),
    (["--lengths", "bogus"], "--lengths 'bogus'"),
    (["--lengths", "lognormal:-1:2"], "--lengths"),
    (["--corpus", "/no/such/corpus.txt"], "--corpus /no/such/corpus.txt: no such corpus"),
    (["--optimizer", "nope"], "'--optimizer'"),
    (["--nccl-version", "2.17"], "--nccl-version '2.17': releases 2.18 to 2.30"),
    # needs the model's sample lengths, checked per point up front (sweep/check.py)
    (["--padding", "longest"], "scale point 0: --padding longest: needs sample lengths"),
    (["--lengths", "squad-1.1", "--corpus", __file__], "both give the sample lengths"),
    (["--padding", "bins:64", "--lengths", "wikipedia"], "--padding bins:64"),
])
def test_bad_values_are_one_line_naming_the_flag(args, flag, captured, capsys):
    assert main(SCALE + ["--gpus", "1,2"] + args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("embsim: error: ") and flag in err, err
    assert captured == []          # nothing ran


def test_option_pairs_reach_every_point_routed_to_their_component(captured):
    """--option KEY=VALUE as in simulate: each key to the strategy or scheduler that declares
    it, on every point; an undeclared key is one line naming --option, before any point."""
    with pytest.raises(ScaleStopped):
        main(["scale", "--model", "lstm-lm1b", "--strategy", "ps", "--scheduler", "priority", "--gpus", "16,32",
              "--option", "local_aggregation=false", "--option", "partition_bytes=4e6"])
    assert len(captured) == 2
    for p in captured:
        cfg = p.simulation_config()
        assert cfg.strategy_options == {"local_aggregation": "false"}
        assert cfg.scheduler_options == {"partition_bytes": 4e6}
        assert config_hash(json.loads(json.dumps(p.config))) == p.hash


def test_an_option_no_component_takes_is_refused(captured, capsys):
    assert main(["scale", "--model", "lstm-lm1b", "--strategy", "ps", "--gpus", "16", "--option", "bogus=1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--option bogus" in err
    assert captured == []

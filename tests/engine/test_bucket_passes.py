"""engine/bucket_passes.py: DDP's copies into and out of its flat gradient buckets (and its
divides), which run on the compute stream, named in the step breakdown with their source."""

import json

import pytest

from embsim.engine.bucket_passes import BUCKET_PASSES, bucket_pass_times
from embsim.engine.run import SimulationConfig, simulate


def run(ddp=None, gpus=2):
    return simulate(SimulationConfig(topology=f"1x{gpus}", model="tiny-lm", batch=16, seq=32, iterations=3,
                                     efficiency_baseline=False,
                                     scheduler_options={"ddp": ddp} if ddp else {}))


@pytest.mark.parametrize("ddp, tags", [
    (None, ["ddp-copy-in", "ddp-copy-out"]),           # torch DDP, the default
    ("torch-view", ["ddp-divide"]),
    ("apex", ["ddp-flatten"]),
])
def test_each_ddp_style_names_its_passes(ddp, tags):
    """The tags are the ones schedulers.ddp_passes gives its ops: a renamed pass would drop
    out of the breakdown silently, so every style's are checked here."""
    r = run(ddp)
    named = [p.tag for p, _ in r.bucket_passes]
    assert named == tags
    assert 0 < sum(s for _, s in r.bucket_passes) < r.compute
    assert {p.tag for p in BUCKET_PASSES} >= set(named)


def test_one_gpu_and_ddp_none_have_no_passes():
    assert run(gpus=1).bucket_passes == () and run("none").bucket_passes == ()
    assert bucket_pass_times({"embrace-ids": 1.0}) == ()      # another strategy's kernel


def test_the_breakdown_names_the_copies_in_text_and_json(capsys):
    from embsim.cli import main
    args = ["simulate", "--topology", "1x2", "--model", "tiny-lm", "--batch", "16", "--seq", "32",
            "--iterations", "3"]
    assert main(args) == 0
    out = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "DDP bucket passes" in out and "of the compute: copy into the flat buckets, with the divide" in out
    assert "reducer.cpp mark_variable_ready_dense" in out and "reducer.cpp finalize_bucket_dense" in out
    assert main(args + ["--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert set(d["compute_bucket_passes_ms"]) == {"ddp-copy-in", "ddp-copy-out"}
    assert 0 < sum(d["compute_bucket_passes_ms"].values()) < d["compute_ms"]

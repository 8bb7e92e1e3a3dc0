"""What a published-throughput run says about its own figure (found by a stranger's probe,
2026-12-06, /tmp/probeG FINDINGS B1, B2, B5, B6): a per-GPU figure (unit tokens/s/GPU with
scale 1/GPUs) got a scaling efficiency k times too small; a per-GPU unit with no scale was
compared with the all-GPU total; `nodes:` was never checked against the topology; a run that
does not fit in GPU memory was scored without a word."""

from __future__ import annotations

import json

import pytest

from embsim.cli import main
from embsim.validate.training import file_runs

LM = "model: tiny-lm, metric: tokens_per_s"


def _write(tmp_path, runs: str):
    path = tmp_path / "t.yaml"
    path.write_text(f"runs: {runs}\n")
    return path


def _one_line_error(capsys, path, words):
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("embsim: error:") and str(path) in err, err
    for w in words:
        assert w in err, (w, err)


def test_per_gpu_runs_scale_as_per_gpu_rates(tmp_path):
    # the repo's LLM convention: unit .../GPU and scale 1/GPUs; efficiency = per-GPU rate ratio
    path = _write(tmp_path, f"""[
      {{id: one, gpus: 1, value: 100000, unit: tokens/s/GPU, embsim: {{topology: 1x1, {LM}}}}},
      {{id: two, gpus: 2, value: 95000, unit: tokens/s/GPU, scaling_base: one,
        embsim: {{topology: 1x2, {LM}, scale: 0.5}}}}]""")
    runs, pairs = file_runs(str(path), iterations=2)
    one, two = runs
    assert len(pairs) == 1
    assert pairs[0].measured == pytest.approx(0.95)
    assert pairs[0].simulated == pytest.approx(two.simulated / one.simulated)
    assert 0.5 < pairs[0].simulated <= 1.0          # was divided by the GPU ratio again: <= 0.5


def test_total_runs_scale_as_before(tmp_path):
    # totals over all GPUs (the shipped files' form): efficiency = total / (k x base total)
    path = _write(tmp_path, f"""[
      {{id: one, gpus: 1, value: 100000, unit: tokens/s, embsim: {{topology: 1x1, {LM}}}}},
      {{id: two, gpus: 2, value: 190000, unit: tokens/s, scaling_base: one,
        embsim: {{topology: 1x2, {LM}}}}}]""")
    runs, pairs = file_runs(str(path), iterations=2)
    one, two = runs
    assert pairs[0].measured == 190000 / (2 * 100000)
    assert pairs[0].simulated == two.simulated / (2 * one.simulated)


@pytest.mark.parametrize("unit", ["tokens/s/GPU", "tokens/s per GPU", "Tokens / sec / GPU",
                                  "samples/s/gpu", "tokens per second per-GPU"])
def test_per_gpu_unit_without_scale_is_refused(tmp_path, capsys, unit):
    path = _write(tmp_path, f"[{{id: pg, gpus: 8, value: 16847, unit: '{unit}', "
                            f"embsim: {{topology: 1x8, {LM}}}}}]")
    assert main(["validate", "--training", str(path), "--iterations", "2"]) == 2
    _one_line_error(capsys, path, ["runs.0.unit", "run pg", "per GPU", "summed over the run's 8 GPUs",
                                   "scale: 0.125"])


def test_per_gpu_unit_on_one_gpu_needs_no_scale(tmp_path):
    path = _write(tmp_path, f"[{{id: pg, gpus: 1, value: 1000, unit: tokens/s/GPU, "
                            f"embsim: {{topology: 1x1, {LM}}}}}]")
    runs, _ = file_runs(str(path), iterations=2)
    assert runs[0].simulated is not None


def test_scale_of_one_over_gpus_with_a_total_unit_in_a_pair_is_refused(tmp_path, capsys):
    # scale 1/GPUs makes the figure per GPU: a unit that does not say so leaves the
    # scaling efficiency unable to tell per-GPU rates from totals
    path = _write(tmp_path, f"""[
      {{id: one, gpus: 1, value: 100000, unit: tokens/s, embsim: {{topology: 1x1, {LM}}}}},
      {{id: two, gpus: 2, value: 95000, unit: tokens/s, scaling_base: one,
        embsim: {{topology: 1x2, {LM}, scale: 0.5}}}}]""")
    assert main(["validate", "--training", str(path), "--iterations", "2"]) == 2
    _one_line_error(capsys, path, ["runs.1.unit", "run two", "1/2", "per GPU"])


def test_nodes_that_disagree_with_the_topology_are_refused(tmp_path, capsys):
    path = _write(tmp_path, f"[{{id: n, gpus: 8, nodes: 4, value: 100000, unit: tokens/s, "
                            f"embsim: {{topology: 'dgx-a100:1x8', {LM}}}}}]")
    assert main(["validate", "--training", str(path), "--iterations", "2"]) == 2
    _one_line_error(capsys, path, ["runs.0.nodes", "run n", "is 4", "dgx-a100:1x8", "has 1 node", "4x2"])


@pytest.mark.parametrize("nodes, words", [(0, ["runs.0.nodes", "must be positive"]),
                                          ("two", ["runs.0.nodes", "must be"])])
def test_nodes_must_be_a_positive_count(tmp_path, capsys, nodes, words):
    path = _write(tmp_path, f"[{{id: n, gpus: 2, nodes: {nodes}, value: 1, "
                            f"embsim: {{topology: 1x2, {LM}}}}}]")
    assert main(["validate", "--training", str(path), "--iterations", "2"]) == 2
    _one_line_error(capsys, path, words)


def test_nodes_that_agree_or_are_trays_of_one_nvlink_domain_pass(tmp_path):
    # GB200 NVL72: a source counts its 4-GPU compute trays as nodes; the preset's node is
    # the rack's one NVLink domain
    path = _write(tmp_path, f"""[
      {{id: a, gpus: 8, nodes: 2, value: 1000, embsim: {{topology: 'dgx-a100:2x4', {LM}}}}},
      {{id: b, gpus: 8, nodes: 2, value: 1000, embsim: {{topology: 'gb200-nvl72:1x8', {LM}}}}}]""")
    runs, _ = file_runs(str(path), iterations=2)
    assert all(r.simulated is not None for r in runs)


def test_a_run_that_does_not_fit_in_gpu_memory_is_marked(tmp_path, capsys):
    # accumulate given: the batch is the micro-batch, whose activations the run holds at once
    path = _write(tmp_path, f"""[
      {{id: big, gpus: 1, value: 1000, embsim: {{topology: 1x1, {LM}, batch: 100000, accumulate: 1}}}},
      {{id: small, gpus: 1, value: 1000, embsim: {{topology: 1x1, {LM}}}}}]""")
    assert main(["validate", "--training", str(path), "--iterations", "2"]) == 0
    out = capsys.readouterr().out
    big = next(l for l in out.splitlines() if "| big |" in l)
    small = next(l for l in out.splitlines() if "| small |" in l)
    assert "(does not fit: 153.5 GB of 85.9 GB per GPU)" in big, big
    assert "does not fit" not in small, small
    summary = next(l for l in out.splitlines() if l.startswith("mean |error|"))
    assert "1 run does not fit in GPU memory as simulated" in summary, summary
    assert main(["validate", "--training", str(path), "--iterations", "2", "--json"]) == 0
    j = json.loads(capsys.readouterr().out)
    assert [r["fits_in_memory"] for r in j["runs"]] == [False, True]
    assert j["runs"][0]["memory_needed"] == j["runs"][0]["memory_per_gpu"] > j["runs"][0]["hbm_bytes"]
    assert j["not_fitting"] == 1


def test_an_accumulated_batch_is_judged_by_one_samples_activations(tmp_path, capsys):
    # no accumulate: the batch may be the accumulated one (the shared originals' form), which
    # the real run split into micro-batches; only state that fits no micro-batch is marked
    path = _write(tmp_path, f"""[
      {{id: split, gpus: 1, value: 1000, embsim: {{topology: 1x1, {LM}, batch: 100000}}}},
      {{id: huge, gpus: 1, value: 1000, embsim: {{topology: 1x1, model: gpt3-175b, batch: 2, seq: 128}}}}]""")
    assert main(["validate", "--training", str(path), "--iterations", "2"]) == 0
    out = capsys.readouterr().out
    split = next(l for l in out.splitlines() if "| split |" in l)
    huge = next(l for l in out.splitlines() if "| huge |" in l)
    assert "does not fit" not in split, split
    assert "does not fit even as micro-batches of one sample:" in huge and "of 85.9 GB per GPU" in huge, huge


def test_runs_that_fit_add_no_memory_words(tmp_path, capsys):
    path = _write(tmp_path, f"[{{id: small, gpus: 1, value: 1000, embsim: {{topology: 1x1, {LM}}}}}]")
    assert main(["validate", "--training", str(path), "--iterations", "2"]) == 0
    out = capsys.readouterr().out
    assert "does not fit" not in out and "GPU memory" not in out


def test_every_run_is_checked_before_any_is_simulated(tmp_path, monkeypatch):
    # a mistake in the last run of a file of minutes-long runs is refused at once
    import embsim.validate.training as training
    from embsim.errors import InputError

    def no_simulation(cfg):
        raise AssertionError("simulated before every run was checked")
    monkeypatch.setattr(training, "simulate", no_simulation)
    path = _write(tmp_path, f"""[
      {{id: ok, gpus: 1, value: 1000, embsim: {{topology: 1x1, {LM}}}}},
      {{id: n, gpus: 8, nodes: 2, value: 1000, embsim: {{topology: 'dgx-a100:1x8', {LM}}}}}]""")
    with pytest.raises(InputError, match="runs.1.nodes"):
        file_runs(str(path), iterations=2)

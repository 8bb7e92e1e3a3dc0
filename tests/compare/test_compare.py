"""`embsim compare`: the matrix, its ranking, JSON and plot."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from embsim.commands.compare import command
from embsim.compare import CompareRow, compare
from embsim.engine.run import SimulationConfig
from embsim.errors import InputError

FIELDS = {"strategy", "scheduler", "step_time_ms", "speedup", "exposed_comm_ms",
          "comm_bytes_per_gpu", "memory_per_gpu_bytes", "fits_in_memory", "notes"}


def test_matrix_ranked_with_baseline_and_refusals():
    cfg = SimulationConfig(topology="1x4", model="lstm-lm1b", batch=8, iterations=3)
    res = compare(cfg, ["allreduce", "embrace", "s2reducer"], ["fifo", "embrace-2d"], workers=2)
    ran = [r for r in res.rows if r.refused is None]
    refused = {r.label for r in res.rows if r.refused is not None}
    assert refused == {"allreduce/embrace-2d", "s2reducer/embrace-2d"}
    assert [r.step_time for r in ran] == sorted(r.step_time for r in ran)
    base = next(r for r in ran if r.label == "allreduce/fifo")
    assert base.speedup == pytest.approx(1.0)
    for r in ran:
        assert r.speedup == pytest.approx(base.step_time / r.step_time)
    assert res.rows[-1].refused is not None        # refused listed last


@pytest.mark.parametrize("workers", [1, 2])
def test_a_strategy_that_cannot_run_the_model_is_refused_not_fatal(workers):
    """fsdp has no DDP bucket for --grad-compress fp16 to compress: compare (which runs every
    strategy by default) lists fsdp as refused instead of exiting on its error, and
    simulate still reports it as bad input. (The case used here was ncf-ml20m, which fsdp
    refused for want of blocks; it now runs as one root unit, tests/strategies/test_fsdp.py.)"""
    cfg = SimulationConfig(topology="1x2", model="tiny-lm", iterations=2, grad_compress="fp16")
    res = compare(cfg, ["allreduce", "fsdp"], ["fifo"], workers=workers)
    fsdp = next(r for r in res.rows if r.label == "fsdp/fifo")
    assert "--grad-compress fp16" in fsdp.refused and fsdp.step_time is None
    assert res.rows[-1] is fsdp
    assert [r.label for r in res.rows if r.refused is None] == ["allreduce/fifo"]
    from embsim.engine.run import simulate
    with pytest.raises(InputError, match="--grad-compress fp16"):
        simulate(SimulationConfig(topology="1x2", model="tiny-lm", strategy="fsdp", iterations=2,
                                  grad_compress="fp16"))


def test_baseline_added_when_not_asked_for():
    cfg = SimulationConfig(topology="1x4", model="tiny-lm", iterations=3)
    res = compare(cfg, ["embrace"], ["priority"], workers=1)
    assert {r.label for r in res.rows} == {"allreduce/fifo", "embrace/priority"}


def test_cli_json_and_plot(tmp_path):
    png = tmp_path / "m.png"
    # lstm-lm1b, not tiny-lm: tiny-lm's one table is tied to its softmax, so allgather runs
    # allreduce's plan there and no other strategy's row is left for the why line
    out = CliRunner().invoke(command, ["--topology", "1x4", "--model", "lstm-lm1b", "--batch", "8",
                                       "--iterations", "3", "--strategies", "allreduce,ps",
                                       "--schedulers", "fifo,priority", "--json", "--plot", str(png)])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)          # "wrote m.png" goes to stderr under --json
    assert f"wrote {png}" in out.stderr
    assert doc["baseline"] == "allreduce/fifo"
    assert len(doc["rows"]) == 4
    assert all(FIELDS <= set(r) for r in doc["rows"])
    res = doc["resolution"]
    ranked = [f"{r['strategy']}/{r['scheduler']}" for r in doc["rows"] if r.get("step_time_ms")]
    assert res["training_mean_error"] > 0 and set(res["not_resolved_against_best"]) <= set(ranked[1:])
    assert res["best"] == ranked[0]
    other = next(r for r in ranked if not r.startswith(ranked[0].split("/")[0] + "/"))
    assert any(doc["why"].startswith(f"{ranked[0]} {verb} {other}, the best row of another strategy")
               for verb in ("beats", "leads", "ties with"))
    assert all(r["collectives_per_step_total"] > 0 and r["comm_wall_ms"] > 0 for r in doc["rows"])
    # the same shapes as simulate's: by op, with the totals beside them
    for r in doc["rows"]:
        assert set(r["comm_bytes_per_gpu"]) == set(r["collectives_per_step"]) and r["comm_bytes_per_gpu"]
        assert sum(r["comm_bytes_per_gpu"].values()) == pytest.approx(r["comm_bytes_per_gpu_total"])
        assert sum(r["collectives_per_step"].values()) == pytest.approx(r["collectives_per_step_total"])
        assert isinstance(r["memory_per_gpu_bytes"], int)
    # every row's own notes, uncondensed (the README: --json carries every note)
    assert any(r["notes"] for r in doc["rows"]) and all(isinstance(r["notes"], list) for r in doc["rows"])
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_table_and_bad_names():
    out = CliRunner().invoke(command, ["--topology", "1x4", "--model", "lstm-lm1b", "--batch", "8",
                                       "--iterations", "3", "--strategies", "allreduce,s2reducer",
                                       "--schedulers", "fifo,embrace-2d"])
    assert out.exit_code == 0, out.output
    assert "refused: s2reducer/embrace-2d" in out.output
    assert "resolution: " in out.output and "docs/validation.md" in out.output
    assert "\nwhy: " in out.output and "exposed communication" in out.output
    bad = CliRunner().invoke(command, ["--topology", "1x4", "--strategies", "nope"])
    assert bad.exit_code != 0
    assert isinstance(bad.exception, InputError) and "--strategies" in str(bad.exception)


def test_per_component_options_reach_only_their_component():
    from embsim.compare import combination, split_scoped
    opts = {"partition_bytes": 8e6, "embrace.shard": "rows", "ps.servers": "dedicated"}
    assert split_scoped(opts) == ({"partition_bytes": 8e6},
                                  {"embrace": {"shard": "rows"}, "ps": {"servers": "dedicated"}})
    base = SimulationConfig(topology="pcie-rtx3090:2x2", model="lstm-lm1b", batch=8, iterations=3)
    one = combination(base, "embrace", "priority", opts)
    assert one.strategy_options == {"shard": "rows"} and one.scheduler_options == {"partition_bytes": 8e6}
    res = compare(base, ["embrace", "ps"], ["fifo"], workers=1,
                  options={"embrace.shard": "rows", "ps.servers": "dedicated"})
    notes = {r.label: r.notes for r in res.rows}
    assert any("hottest shard" in n for n in notes["embrace/fifo"])
    assert any("dedicated servers" in n for n in notes["ps/fifo"])
    with pytest.raises(InputError, match="nope"):
        compare(base, ["embrace"], ["fifo"], workers=1, options={"nope.x": 1})
    with pytest.raises(InputError, match="shard"):
        compare(base, ["embrace"], ["fifo"], workers=1, options={"embrace.shrad": "rows"})
    # the CLI turns dashes in keys into underscores: embrace_2d.KEY still names embrace-2d
    plain, scoped = split_scoped({"embrace_2d.partition_bytes": 8e6})
    assert scoped == {"embrace-2d": {"partition_bytes": 8e6}}


def test_ablation_runs_every_part_off_and_names_the_bottleneck():
    from embsim.ablation import ablation
    cfg = SimulationConfig(topology="pcie-rtx3090:4x4", model="lstm-lm1b", iterations=4)
    # a tight credit: at ByteScheduler's default 64 MB, which posts blocks as they become
    # ready, embrace-2d no longer beats fifo here since NCCL collectives run one at a time
    res = ablation(cfg, "embrace", {"credit_bytes": 16e6})
    labels = [label for label, _ in res.rows]
    assert labels == ["fifo", "priority", "embrace-2d", "embrace-2d, reorder off", "embrace-2d, defer off",
                      "embrace-2d, prefetch off", "embrace-2d, cross_iteration off"]
    rows = dict(res.rows)
    assert rows["embrace-2d"].step_time < rows["fifo"].step_time
    lines = res.bottlenecks()
    slower = [label for label, r in res.rows if r.step_time > rows["fifo"].step_time]
    assert len(lines) == len(slower) and all("bottleneck" in line for line in lines)
    out = CliRunner().invoke(command, ["--ablation", "--topology", "pcie-rtx3090:4x4", "--model", "lstm-lm1b",
                                       "--iterations", "4", "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert [r["run"] for r in doc["rows"]] == labels
    # each run says which options it ran with (probe F8): the part switched off among them
    off = next(r for r in doc["rows"] if r["run"] == "embrace-2d, reorder off")["options"]
    assert off["scheduler"]["name"] == "embrace-2d" and off["scheduler"]["options"]["reorder"]["value"] is False
    bad = CliRunner().invoke(command, ["--ablation", "--strategies", "embrace,ps"])
    assert bad.exit_code != 0


@pytest.mark.parametrize("flag", [["--plot", "x.png"], ["--schedulers", "fifo"]])
def test_ablation_refuses_flags_it_would_ignore(flag, tmp_path, capsys):
    from embsim.cli import main
    argv = ["compare", "--ablation", "--topology", "1x2", "--model", "tiny-lm"] + flag
    if flag[0] == "--plot":
        argv[-1] = str(tmp_path / "x.png")
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and flag[0] in err and "--ablation" in err
    assert not (tmp_path / "x.png").exists()


def test_rows_within_the_validated_error_of_the_best_are_not_resolved():
    """A row the model cannot tell from the best (its step within the training validation's
    mean error) is named; refused and not-fitting rows never are."""
    from embsim.compare import unresolved_with_best
    from embsim.report.compare_table import resolution_text
    rows = (CompareRow("embrace", "embrace-2d", step_time=100e-3, fits_in_memory=True),
            CompareRow("embrace", "fifo", step_time=104e-3, fits_in_memory=True),
            CompareRow("ps", "fifo", step_time=107e-3, fits_in_memory=True),
            CompareRow("allreduce", "fifo", step_time=101e-3, fits_in_memory=False),
            CompareRow("s2reducer", "embrace-2d", refused="no rows"))
    assert unresolved_with_best(rows, error=0.063) == ["embrace/fifo"]
    assert unresolved_with_best(rows, error=0.08) == ["embrace/fifo", "ps/fifo"]
    assert unresolved_with_best(rows[4:]) == []

    class Result:
        pass
    r = Result()
    r.rows = rows
    assert resolution_text(r).startswith("resolution: embrace/fifo within 6.2% of the best")
    r.rows = (rows[0], rows[2])
    assert "leads every other fitting row by more than 6.2%" in resolution_text(r)
    # one fitting row that ran: no lead to claim (probe P: five of six rows refused)
    r.rows = (rows[0], rows[3], rows[4])
    assert resolution_text(r) == ("resolution: embrace/embrace-2d is the only fitting plan that ran: "
                                  "nothing to rank it against")


def test_resolution_when_no_row_fits_or_runs_and_in_any_order():
    """Rows that ran but do not fit are not 'no row ran'; the JSON names the best (None when
    nothing is ranked), so an empty not-resolved list cannot be read as 'resolved'; the best
    is the fastest fitting row whatever order the rows come in."""
    from embsim.compare import best_fitting, unresolved_with_best
    from embsim.report.compare_table import resolution_text
    from embsim.report.result_json import compare_json

    class Result:
        baseline, compute_source = "allreduce/fifo", "kernel model"
    r = Result()
    big = (CompareRow("fsdp", "fifo", step_time=1.0, fits_in_memory=False),
           CompareRow("allreduce", "fifo", step_time=1.1, fits_in_memory=False))
    r.rows = big
    assert resolution_text(r) == "resolution: no row fits in memory, so none is ranked as the best"
    assert compare_json(r)["resolution"]["best"] is None
    r.rows = (CompareRow("s2reducer", "embrace-2d", refused="no rows"),)
    assert resolution_text(r) == "resolution: no row ran"
    shuffled = (CompareRow("ps", "fifo", step_time=104e-3, fits_in_memory=True),
                CompareRow("embrace", "fifo", step_time=100e-3, fits_in_memory=True),
                CompareRow("allgather", "fifo", step_time=120e-3, fits_in_memory=True))
    assert best_fitting(shuffled).label == "embrace/fifo"
    assert unresolved_with_best(shuffled) == ["ps/fifo"]
    r.rows = shuffled
    assert compare_json(r)["resolution"] == {"training_mean_error": 0.062, "best": "embrace/fifo",
                                             "not_resolved_against_best": ["ps/fifo"],
                                             "best_at_untuned_defaults": []}


def test_tensor_parallel_refuses_the_strategies_it_does_not_compose_with_not_the_compare():
    # --tensor-parallel 2 runs under allreduce and fsdp only: compare's other rows are
    # refused with the reason, the matrix still runs (it exited 2 on the first strategy)
    cfg = SimulationConfig(topology="dgx-h100:1x4", model="gpt2", iterations=2, tensor_parallel=2)
    res = compare(cfg, ["allgather", "allreduce", "ps"], ["fifo"], workers=1)
    refused = {r.label: r.refused for r in res.rows if r.refused is not None}
    assert set(refused) == {"allgather/fifo", "ps/fifo"}
    assert all("--tensor-parallel 2: composes with --strategy allreduce, fsdp or distopt" in v
               for v in refused.values())
    assert [r.label for r in res.rows if r.refused is None] == ["allreduce/fifo"]


def test_pipeline_parallel_refuses_rows_not_the_compare():
    cfg = SimulationConfig(topology="dgx-h100:1x4", model="gpt2", iterations=2, pipeline_parallel=2)
    res = compare(cfg, ["allgather", "allreduce"], ["fifo", "priority"], workers=1)
    refused = {r.label: r.refused for r in res.rows if r.refused is not None}
    assert "--pipeline-parallel 2: composes with --strategy" in refused["allgather/fifo"]
    assert "--pipeline-parallel 2: composes with --scheduler fifo" in refused["allreduce/priority"]
    assert [r.label for r in res.rows if r.refused is None] == ["allreduce/fifo"]


def test_a_pooled_model_lists_embrace_2d_as_refused_and_ranks_the_rest():
    """embrace-2d's defer is not modelled for bag lookups (one summed vector per sample):
    compare lists that cell as refused instead of stopping on it."""
    cfg = SimulationConfig(topology="dgx-a100:1x8", model="merlin-synthetic-tiny", batch=8192, iterations=2)
    res = compare(cfg, ["embrace", "allreduce"], ["fifo", "embrace-2d"], workers=1)
    two_d = next(r for r in res.rows if r.label == "embrace/embrace-2d")
    assert "pools its lookups" in two_d.refused
    assert {r.label for r in res.rows if r.refused is None} == {"embrace/fifo", "allreduce/fifo"}


def test_ablation_of_a_plan_embrace_2d_refuses_is_one_line_exit_2(capsys):
    """bert-base has no sparse table left, so embrace-2d refuses it: --ablation raised a
    TypeError on the refused row's missing step time (and results_checks.py crashed)."""
    from embsim.cli import main
    assert main(["compare", "--ablation", "--topology", "pcie-rtx3090:1x2", "--model", "bert-base",
                 "--iterations", "2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("embsim: error: --ablation: embrace under embrace-2d on bert-base is refused (")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_lead_won_at_the_schedulers_untuned_defaults_says_so():
    """probe I3: lstm-lm1b on 4x4 RTX 3090 named ps/embrace-2d resolved at ByteScheduler's
    default 64 MB credit; embrace-2d is 2.4 % behind fifo at 32 MB and ahead at 16 MB."""
    from embsim.engine.options_used import DEFAULT, OPTION, OptionsUsed, OptionUsed
    from embsim.compare import untuned_defaults
    from embsim.report.compare_table import resolution_text

    def used(source):
        return OptionsUsed("ps", "embrace-2d", (OptionUsed("scheduler", "credit_bytes", 64e6, source),
                                                OptionUsed("scheduler", "reorder", "on", DEFAULT)))

    class Result:
        pass
    r = Result()
    best = CompareRow("ps", "embrace-2d", step_time=39e-3, fits_in_memory=True, options=used(DEFAULT))
    r.rows = (best, CompareRow("embrace", "fifo", step_time=45e-3, fits_in_memory=True))
    assert untuned_defaults(best) == ["credit_bytes=64000000"]
    text = resolution_text(r)
    assert "leads every other fitting row by more than 6.2%" in text
    assert text.endswith(", at embrace-2d's default credit_bytes=64000000, which the embrace-2d authors' systems tune "
                         "per job: try -o embrace-2d.credit_bytes=... (or compare --ablation) before "
                         "trusting the lead")
    r.rows = (CompareRow("ps", "embrace-2d", step_time=39e-3, fits_in_memory=True, options=used(OPTION)),
              r.rows[1])
    assert "tune per job" not in resolution_text(r)          # the user set it

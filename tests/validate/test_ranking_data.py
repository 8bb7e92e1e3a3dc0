"""The published strategy comparisons (embsim/validation_data/rankings/*.yaml): every file
parses, names its source (URL and commit or version), maps every system to an embsim
strategy or says why not, gives a number for every system in every run, and points at a
topology and model embsim loads; bad files are refused with the file and key. The ranking
check itself (benchmarks/ranking_check.py) runs here once, as a gate on what it reports."""

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest
import yaml

from embsim.errors import InputError
from embsim.topology import load_topology
from embsim.workload import load_model

ROOT = Path(__file__).resolve().parents[2]
RANKINGS = ROOT / "embsim" / "validation_data" / "rankings"
TABLES = sorted(RANKINGS.glob("*.yaml"))
PARALLAX = RANKINGS / "parallax-lm1b-readme.yaml"     # the broken-file tests edit this one
OPENEMBEDDING = RANKINGS / "openembedding-criteo.yaml"


def _checker():
    spec = importlib.util.spec_from_file_location("ranking_check", ROOT / "benchmarks" / "ranking_check.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod        # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


check = _checker()


def test_there_is_a_published_comparison():
    assert TABLES, "no rankings file"


@pytest.mark.parametrize("path", TABLES, ids=lambda p: p.stem)
def test_table_parses_and_every_row_has_a_source(path):
    table = check.load_table(path)
    assert table.source["url"].startswith("https://")
    pinned = table.source.get("commit") or table.source.get("version")
    assert pinned and (not table.source.get("commit") or table.source["commit"] in table.source["url"])
    assert len(table.runs) >= 1 and len(table.expressible()) >= 2
    # every run's numbers are the table's (one source per file), each system measured
    for run in table.runs:
        assert run.machines >= 1 and set(run.measured) == {s.name for s in table.systems}
    # at least two different strategies, or there is no order to compare
    assert len({check._key(s) for s in table.expressible()}) >= 2


@pytest.mark.parametrize("path", TABLES, ids=lambda p: p.stem)
def test_table_topology_and_model_load_in_embsim(path):
    table = check.load_table(path)
    for run in table.runs:
        topo = load_topology(f"{ROOT / table.topology}:{run.machines}x{run.gpus_per_machine}")
        assert topo.n_gpus == run.gpus
    for key, file in table.models.items():
        if file:
            assert load_model(str(ROOT / file)).tables
        else:
            assert table.not_simulated[key]
    # every system's strategy options are ones the strategy takes
    from embsim.strategies.base import STRATEGIES
    for s in table.expressible():
        STRATEGIES.get(s.strategy).from_options(s.options)


def _broken(tmp_path, edit) -> Path:
    doc = yaml.safe_load(PARALLAX.read_text())
    edit(doc)
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


@pytest.mark.parametrize("edit, key", [
    (lambda d: d["source"].pop("url"), "source"),
    (lambda d: d["source"].pop("commit"), "source"),
    (lambda d: d["systems"][next(iter(d["systems"]))].update(embsim="sparse-magic"), "embsim"),
    (lambda d: d["systems"][next(iter(d["systems"]))].pop("why"), "why"),
    (lambda d: d["runs"][0]["words_per_s"].popitem(), "runs[0]"),
    (lambda d: d["embsim"].update(model="embsim/validation_data/rankings/models/none.yaml"), "embsim.model"),
])
def test_a_broken_table_is_refused_naming_file_and_key(tmp_path, edit, key):
    with pytest.raises(InputError, match=rf"broken\.yaml: .*{re.escape(key)}"):
        check.load_table(_broken(tmp_path, edit))


def test_the_command_line_refuses_a_broken_table_with_exit_2(tmp_path, capsys):
    path = _broken(tmp_path, lambda d: d["source"].pop("url"))
    assert check.main([str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: broken.yaml: source") and "Traceback" not in err


def test_the_command_line_names_the_file_and_refuses_bad_arguments(tmp_path, capsys):
    """A missing file, an option given twice, an unknown flag and a strategy option the
    strategy refuses: one line naming the file or flag, exit 2."""
    assert check.main([str(tmp_path / "none.yaml")]) == 2
    assert "none.yaml: cannot read" in capsys.readouterr().err

    def nowhere(d):
        for system in d["systems"].values():
            if system.get("embsim") == "ps":
                system["options"]["servers"] = "nowhere"
    assert check.main([str(_broken(tmp_path, nowhere))]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: broken.yaml: --option servers='nowhere'") and "\n" not in err
    for argv in (["--json", "--json"], ["--bogus"]):
        with pytest.raises(SystemExit) as exc:
            check.main(argv)
        assert exc.value.code == 2
        assert len(capsys.readouterr().err.strip().splitlines()) == 1


def test_parallax_lm1b_ranking_gate():
    """Held-out check (nothing was fitted on it): embsim's hybrid PS vs NCCL AllGather on
    the Parallax README's LM-1B chart. Order: 4 of 8 pairs agree (1 and 2 machines: embsim
    puts the AllGather systems ahead, published has the hybrid ahead). Ratio to the
    baseline: mean 32.4 %, max 43.4 % (docs/rankings.md). MOVED, worse, when ps modelled
    Parallax's local aggregation with its gather into host memory (9.3 ms per step on the
    testbed's assumed 6 GB/s socket link, idle): before 6 of 8, mean 26.8 %, max 38.8 %
    (bounds 6, 0.275, 0.395); then 28.8 % / 40.3 % (bounds 0.295, 0.410) while the gather
    ran on the compute stream; 27.7 % / 39.3 % on the push's own stream; MOVED, worse,
    32.4 % / 43.4 % (bounds 0.282, 0.398 -> 0.330, 0.440) when the copies' bytes joined the
    network's links and share the socket link with the dense AllReduce (s4-pscopy2).
    MOVED, better, when the testbed file's cpu_link_gbps became the physical QPI (2 x 9.6
    GT/s = 38.4 GB/s per direction, Intel ARK E5-2698 v4, an [ASSUMPTION] as to the SKU;
    taken from the spec, not chosen on this check) instead of NCCL's BDW_QPI_BW 6, which
    now only drives NCCL's search (s4-socket): 4 -> 8 of 8 pairs, 32.4 / 43.4 % ->
    18.6 / 33.8 % (bounds 4, 0.330, 0.440 -> 8, 0.190, 0.342). MOVED, better, when the
    model file said framework tensorflow (2026-12-04, a fact of the system): the AllGather
    baseline's Adagrad dedups the gathered IndexedSlices as TensorFlow does (tf.unique):
    16.02 / 31.36 % (bounds 0.190, 0.342 -> 0.161, 0.316). MOVED, better, when both
    AllGather systems sent one row per lookup as their code does (mapping change read from
    Parallax's mpi/graph_transform.py at the chart's commit; the data file's
    after_first_contact) and the tied table counted its sampled softmax's rows: 13.04 / 19.68 %
    (bounds 0.161, 0.316 -> 0.1311, 0.1978). MOVED, worse, 2026-12-05 (twenty-seventh
    session), when allgather sent a table's indices and rows as the two allgathers Horovod
    sends an IndexedSlices as (its two tables, input and sampled softmax, a whole backward
    apart, each its own pair of calls): the baseline slows at 8 machines and the hybrid's
    ratio there grows 2.39 -> 2.40 (+20.1 %): 13.06 / 20.15 % (bounds 0.1311, 0.1978 ->
    0.1313, 0.2025)."""
    res = check.check_table(check.load_table(RANKINGS / "parallax-lm1b-readme.yaml"))
    assert res["pairs"] == 8 and res["pairs_agree"] >= 8
    assert res["ratio_error_mean"] <= 0.1313 and res["ratio_error_max"] <= 0.2025
    again = check.check_table(check.load_table(RANKINGS / "parallax-lm1b-readme.yaml"))
    assert again == res, "same inputs, same simulated figures"


def test_a_file_that_is_not_yaml_is_refused_with_its_line(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("name: x\nruns: [\n")
    with pytest.raises(InputError, match=r"broken\.yaml: line \d+ not YAML"):
        check.load_table(path)


def test_a_table_outside_the_repository_is_named_by_its_path(tmp_path):
    """A user's table elsewhere (its topology and model paths still the repository's)
    runs and is named as given; it used to stop on Path.relative_to with a traceback."""
    path = tmp_path / "mine.yaml"
    path.write_text(PARALLAX.read_text())
    res = check.check_table(check.load_table(path))
    assert res["file"] == str(path) and res["pairs"] == 8


def test_the_command_line_names_a_table_outside_the_repository_as_given(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.yaml").write_text(PARALLAX.read_text())
    assert check.main(["mine.yaml", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["file"] == "mine.yaml"


def test_openembedding_table_maps_its_systems_and_models():
    """OpenEmbedding's chart: Horovod is stock Horovod's uncoalesced allgather, OpenEmbedding
    & Horovod its Cache Local (tables under the 4,096 batch replicated and AllReduced, the rest
    on per-worker servers of the same machine); xDeepFM recorded, not simulated."""
    table = check.load_table(OPENEMBEDDING)
    systems = {s.name: s for s in table.systems}
    assert table.baseline == "horovod"
    # after first contact: TF 2.5's Keras Embedding keeps Horovod's tables in host memory
    assert (systems["horovod"].strategy, systems["horovod"].options) == (
        "allgather", {"gather_rows": "lookups", "table_device": "cpu"})
    oe = systems["openembedding-horovod"]
    assert oe.strategy == "ps" and oe.options["dense_vocab_below"] == 4096
    assert oe.options["local_aggregation"] is False and oe.options["pull"] == "gpu"
    assert table.models["xdeepfm-9"] is None and "CIN" in table.not_simulated["xdeepfm-9"]
    assert len(table.runs) == 20 and len(table.simulated_runs()) == 16
    assert {r.gpus for r in table.runs} == {1, 2, 4, 8} and all(r.machines == 1 for r in table.runs)


@pytest.mark.parametrize("edit, key", [
    (lambda d: d["runs"][0].update(model="wdl-128"), "runs[0].model"),
    (lambda d: d["runs"][0].update(gpus=9), "runs[0].gpus"),
    (lambda d: d["embsim"]["not_simulated"].pop("xdeepfm-9"), "embsim.not_simulated.xdeepfm-9"),
    (lambda d: d["embsim"].update(model="x.yaml"), "embsim.model"),
])
def test_a_broken_multi_model_table_is_refused_naming_file_and_key(tmp_path, edit, key):
    doc = yaml.safe_load(OPENEMBEDDING.read_text())
    edit(doc)
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(InputError, match=rf"broken\.yaml: {re.escape(key)}"):
        check.load_table(path)


def test_openembedding_ranking_gate_on_one_point():
    """Held-out (the data file, topology, models and mapping were committed before the first
    simulation): WDL dim 9 at 8 GPUs, OpenEmbedding & Horovod over Horovod published 3.76,
    simulated 2.43 at first contact (-35.4 %), order agrees. The whole table (16 points, ~90 s)
    is gated in .ci/run at its headline x1.005; this point keeps the test short.
    Bounds leave only rounding room: a change that makes it worse fails here and must say so.
    TIGHTENED 2026-12-03, 0.354 x 1.005 -> 0.2169 x 1.005: after first contact Horovod's tables
    moved to the CPU, as TF 2.5's Keras Embedding places them (the data file's
    after_first_contact): simulated 4.57, +21.7 % (now over, not under, the published ratio).
    LOOSENED 2026-12-04, 0.2169 -> 0.7973 (x 1.005): Horovod's MPI allgather pays its fusion
    buffer's copies (mpi_operations.cc MPIAllgather::Execute), which brings Horovod's own
    scaling toward the chart and leaves OpenEmbedding's missing RPC costs exposed: 6.75, +79.7 %."""
    from dataclasses import replace
    table = check.load_table(OPENEMBEDDING)
    point = replace(table, runs=tuple(r for r in table.runs if r.model == "wdl-9" and r.gpus == 8))
    res = check.check_table(point)
    assert res["pairs"] == 1 and res["pairs_agree"] == 1
    assert res["ratio_error_max"] <= 0.7973 * 1.005


def test_each_systems_scaling_error_is_over_its_larger_runs():
    scales = [{"system": "a", "published": [1.0, 1.5, 2.0], "simulated": [1.0, 1.8, 1.9]},
              {"system": "a", "published": [1.0, 3.0], "simulated": [1.0, 2.0]},
              {"system": "b", "published": [1.0], "simulated": [1.0]}]
    err = check.scaling_error(scales)
    assert set(err) == {"a"}                      # one run: nothing to compare
    assert err["a"]["points"] == 3
    assert err["a"]["mean"] == pytest.approx((0.3 + 0.1 + 1.0) / 3)
    assert err["a"]["max"] == pytest.approx(1.0)

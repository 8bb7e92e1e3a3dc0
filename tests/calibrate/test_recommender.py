"""calibrate builds a recommender's layers and whole steps from the zoo's layer list
(embsim.calibrate.recommender), and refuses the files it cannot read as a model."""

import re
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from embsim.calibrate.config import CalibrateConfig
from embsim.calibrate.launch import resolve_seq
from embsim.calibrate.modules import Combine, DotInteraction, build_layer, example_inputs, layer_ids
from embsim.calibrate.recommender import (Recommender, RecommenderBatches, per_sample, stack_plan,
                                          table_token_stats)
from embsim.calibrate.spec import LayerShape, ModelShape, TableShape, model_spec
from embsim.errors import InputError
from embsim.validate.steps import capped_tables

TINY_DLRM = str(Path(__file__).parent / "models" / "tiny-dlrm.yaml")


def shrunk(model: ModelShape, rows: int = 500) -> ModelShape:
    """The model with every table cut to `rows` rows (the zoo's do not fit a test)."""
    return replace(model, tables={k: replace(t, vocab=min(t.vocab, rows)) for k, t in model.tables.items()})


def test_dlrm_reads_as_its_authors_wire_it():
    plan = {s.layer.name: s for s in stack_plan(model_spec("dlrm-criteo-f15"))}
    assert plan["bottom_mlp0"].dense == 13 and plan["bottom_mlp0"].pops == 0   # the 13 numerics
    assert plan["bottom_mlp1"].pops == 1 and plan["bottom_mlp1"].dense == 0
    assert plan["stack"].pops == 27                  # bottom MLP output + 26 lookups
    assert plan["interaction"].pops == 1 and plan["loss"].pops == 1


def test_a_concats_missing_inputs_are_the_numeric_features():
    plan = {s.layer.name: s for s in stack_plan(model_spec("merlin-synthetic-tiny"))}
    assert plan["concat"].pops == 58 and plan["concat"].dense == 10


def test_ncf_joins_its_two_branches():
    plan = {s.layer.name: s for s in stack_plan(model_spec("ncf-ml20m"))}
    assert [plan[n].pops for n in ("gmf", "mlp_concat", "final_concat")] == [2, 2, 2]
    assert not any(s.dense for s in plan.values())


@pytest.mark.parametrize("model, says", [
    ("deepfm-criteo", "layer 'loss' (softmax_loss) ends the step, but the outputs of "
                      "['first_order_lookup', 'fm'] reach no loss"),
    ("wide-deep-outbrain", "layer 'wide_deep_sum' (combine product) reads vectors 1 wide, but is "
                           "given widths [1, 23]"),
    ("merlin-synthetic-medium", "layer 'interact' (combine sum) reads 7 vectors, but only 1 are before it"),
])
def test_files_that_do_not_read_as_a_model_are_refused_naming_the_layer(model, says):
    with pytest.raises(InputError) as exc:
        stack_plan(model_spec(model))
    assert str(exc.value) == f"--model {model}: calibrate cannot run whole training steps of it: {says}"


def test_token_models_are_not_per_sample():
    assert per_sample(model_spec("dlrm-torchrec-criteo"))
    for name in ("tiny-lm", "bert-large-squad", "gnmt", "nmt-iwslt"):
        assert not per_sample(model_spec(name))


@pytest.mark.parametrize("name", ["dlrm-criteo-f15", "dlrm-torchrec-criteo", "ncf-ml20m",
                                  "merlin-synthetic-small"])
def test_a_recommender_step_trains_every_table(name):
    model = shrunk(model_spec(name))
    torch.manual_seed(0)
    rec = Recommender(model, sparse=True)
    loss = rec(*RecommenderBatches(model).inputs(0, 0, 16))
    assert loss.shape == () and 0.3 < loss.item() < 1.5        # BCE of a fresh model on 0/1 labels
    loss.backward()
    for table, module in rec.table_modules().items():
        assert module.weight.grad is not None and module.weight.grad.is_sparse, table
    assert all(p.grad is not None for p in rec.body.parameters())


def test_batches_are_deterministic_and_within_each_table():
    model = shrunk(model_spec("dlrm-torchrec-criteo"), rows=50)
    a = RecommenderBatches(model, seed=1).inputs(1, 2, 8)
    b = RecommenderBatches(model, seed=1).inputs(1, 2, 8)
    for layer, ids in a[0].items():
        assert torch.equal(ids, b[0][layer]) and ids.shape == (8, 1)
        assert 0 <= int(ids.min()) and int(ids.max()) < 50
    assert len(a[1]) == 1 and a[1][0].shape == (8, 13)        # the dense arch's 13 numerics
    assert set(a[2].tolist()) <= {0.0, 1.0}
    c = RecommenderBatches(model, seed=1).inputs(0, 2, 8)      # another rank: another batch
    assert any(not torch.equal(c[0][k], a[0][k]) for k in a[0])


def test_dot_interaction_is_the_lower_triangle_after_the_first_vector():
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]])          # vectors (1,2) (3,4) (5,6)
    y = DotInteraction(vectors=3, dim=2, out=8)(x)
    pairs = [3 + 8, 5 + 12, 15 + 24]                             # x1.x0, x2.x0, x2.x1
    assert y.tolist() == [[1.0, 2.0, *pairs, 0.0, 0.0, 0.0]]
    with pytest.raises(InputError, match="out 4 is fewer than the 5 features"):
        DotInteraction(vectors=3, dim=2, out=4)


def test_combine_ops():
    a, b = torch.tensor([[1.0, 2.0]]), torch.tensor([[3.0, 4.0]])
    assert Combine("concat")(a, b).tolist() == [[1.0, 2.0, 3.0, 4.0]]
    assert Combine("product")(a, b).tolist() == [[3.0, 8.0]]
    assert Combine("sum")(a, b).tolist() == [[4.0, 6.0]]


def test_every_recommender_layer_is_timed_on_its_own_shape():
    model = model_spec(TINY_DLRM)
    gen = torch.Generator().manual_seed(0)
    tokens = torch.zeros(8, 1, dtype=torch.long)
    shapes = {}
    for layer in model.layers:
        inputs = example_inputs(layer, model, 8, 1, tokens, gen)
        out = build_layer(layer, model)(*inputs)
        shapes[layer.name] = (tuple(inputs[0].shape), len(inputs))
        (out if out.dim() == 0 else out.sum()).backward()
    assert shapes["embedding"] == ((8, 4), 1)                    # 4 lookups per sample
    assert shapes["bag"] == ((8, 3), 1)
    assert shapes["stack"] == ((8, 1, 16), 6)
    assert shapes["interaction"] == ((8, 1, 96), 1)


def test_a_second_vocabulary_is_read_within_its_own_rows():
    # nmt-iwslt's target table (90,000 rows) is not the source's (128,000): its layer
    # once read the source's ids and the calibration died on an IndexError
    model = model_spec("nmt-iwslt")
    target = next(l for l in model.layers if l.name == "target_embedding")
    tokens = torch.full((4, 8), 127_999)
    ids = layer_ids(target, model, 4, 8, tokens)
    assert ids.shape == (4, 8) and int(ids.max()) < 90_000
    source = next(l for l in model.layers if l.name == "source_embedding")
    assert layer_ids(source, model, 4, 8, tokens) is tokens      # the run's own tokens


def test_token_stats_per_table():
    model = model_spec(TINY_DLRM)
    stats = {s.table: s for s in table_token_stats(RecommenderBatches(model), 32, 2)}
    assert set(stats) == {"categorical", "bagged"}
    assert stats["categorical"].seq == 4 and stats["bagged"].seq == 3
    for s in stats.values():
        assert max(s.unique_per_rank) <= s.union <= sum(s.unique_per_rank)


def test_sequence_length_follows_the_model():
    lm, rec = model_spec("tiny-lm"), model_spec(TINY_DLRM)
    assert resolve_seq(CalibrateConfig(), lm).seq == 32
    assert resolve_seq(CalibrateConfig(seq=16), lm).seq == 16
    assert resolve_seq(CalibrateConfig(), rec).seq == 1
    with pytest.raises(InputError, match=rf"^--seq 8: --model {re.escape(TINY_DLRM)} reads one row of features"):
        resolve_seq(CalibrateConfig(seq=8), rec)
    with pytest.raises(InputError, match=rf"^--corpus x.txt: --model {re.escape(TINY_DLRM)} reads categorical"):
        resolve_seq(CalibrateConfig(corpus="x.txt"), rec)
    with pytest.raises(InputError, match="calibrate cannot run whole training steps"):
        resolve_seq(CalibrateConfig(), model_spec("deepfm-criteo"))


@pytest.fixture(scope="module")
def recommender_trace(tmp_path_factory, calibrated):
    from embsim.trace import load_trace
    d = tmp_path_factory.mktemp("rec")
    # --max-rows 600 cuts both tables (3,000 and 2,000 rows), as a DLRM's must be cut to fit
    path = calibrated(CalibrateConfig(model=TINY_DLRM, batch=32, world=2, backend="gloo", quick=True,
                                      out=str(d / "t.yaml"), command="test", max_rows=600))
    return load_trace(path), path


def test_a_recommender_calibrates_end_to_end(recommender_trace):
    trace, _ = recommender_trace
    assert trace.seq == 1 and trace.model == TINY_DLRM
    assert {"stack", "interaction", "embedding", "embedding:sparse", "bag", "bag:sparse",
            "bottom_mlp0", "loss"} <= set(trace.layers)
    assert all(t.timed == "isolated" for t in trace.layers.values())   # no in-step marks
    assert set(trace.steps) == {"allreduce", "allgather", "embrace"}
    for s in trace.steps.values():
        assert s.seq == 1 and s.batch == 32 and all(t > 0 for t in s.samples_s)
    assert {t.table for t in trace.token_stats} == {"categorical", "bagged"}
    assert trace.table_rows_cap == 600 and {t.vocab for t in trace.token_stats} == {600}
    sparse = next(o for o in trace.optimizer if o.name == "sparse-rows")
    assert 0 < sparse.elements <= 32 * 7 * 16       # distinct rows read x width
    assert trace.rank_skew is not None and trace.rank_skew.factor >= 1.0


def test_a_recommender_trace_validates(recommender_trace):
    from embsim.validate.steps import step_errors
    trace, path = recommender_trace
    if trace.host_topology is None:
        # a quick sweep on a loaded machine can leave no usable link fit, and so no machine
        # to simulate on (test_calibrate_run.py's quick trace allows for it the same way)
        with pytest.raises(InputError, match="host topology|--topology"):
            step_errors(path)
        return
    errors = step_errors(path)
    assert {e.strategy for e in errors} == {"allreduce", "allgather", "embrace"}
    for e in errors:
        assert e.problem is None and e.simulated_s > 0, e
        assert e.compute_source.startswith(f"measured: {path} (cpu, gloo) (tables over 600 rows "
                                           "measured at 600: calibrate --max-rows)")
    # the steps ran 600-row tables, and so does their simulation
    assert capped_tables(trace) == {"tables": {"categorical": {"vocab": 600}, "bagged": {"vocab": 600}}}


def test_max_rows_cuts_only_larger_tables_and_is_recorded_only_where_it_cut():
    from embsim.calibrate.launch import capped_rows
    from embsim.calibrate.spec import calibration_spec
    spec = calibration_spec(TINY_DLRM, 2500)
    assert {k: t.vocab for k, t in spec.tables.items()} == {"categorical": 2500, "bagged": 2000}
    assert capped_rows(CalibrateConfig(model=TINY_DLRM, max_rows=2500)) == 2500
    assert capped_rows(CalibrateConfig(model=TINY_DLRM, max_rows=5000)) is None
    assert capped_rows(CalibrateConfig(model=TINY_DLRM)) is None
    # a DLRM's 32.7M-row joint table: refused as too big, accepted capped
    from embsim.calibrate.memory import require_fit
    with pytest.raises(InputError, match="--max-rows"):
        require_fit(calibration_spec("dlrm-criteo-f15"), 2, "gloo")
    require_fit(calibration_spec("dlrm-criteo-f15", 100_000), 2, "gloo")


def write(tmp_path, text: str) -> str:
    path = tmp_path / "m.yaml"
    path.write_text(text)
    return str(path)


NCF_LIKE = """name: my-ncf
description: two towers multiplied
source: probe N
defaults: {{batch: 8, seq: 1, dtype: fp32, optimizer: sgd}}
tables:
  - {{name: {users}, vocab: 300, dim: 8, input: u}}
  - {{name: {items}, vocab: 200, dim: 8, input: i}}
layers:
  - {{name: {keys}, kind: embedding, table: {users}, lookups: 1}}
  - {{name: values, kind: embedding, table: {items}, lookups: 1}}
  - {{name: gmf, kind: combine, op: product, inputs: 2, dim: 8}}
  - {{name: mlp, kind: linear, repeat: 2, in: 8, out: 8, activation: relu}}
  - {{name: mlp_1, kind: linear, in: 8, out: {classes}}}
  - {{name: loss, kind: softmax_loss, classes: {classes}}}
"""


@pytest.mark.parametrize("users, items, keys", [("users", "items", "keys"), ("user.id", "update", "type")])
def test_a_files_names_are_not_module_attributes(tmp_path, users, items, keys):
    # probe N: a table 'items' or a layer 'keys' crashed the ranks (ModuleDict attributes),
    # a dotted name too; a repeated `mlp` (mlp.0, mlp.1) and an `mlp_1` shared one module
    spec = model_spec(write(tmp_path, NCF_LIKE.format(users=users, items=items, keys=keys, classes=1)))
    rec = Recommender(spec)
    from embsim.workload import load_model
    assert sum(p.numel() for p in rec.parameters()) == load_model(spec.given).params
    rec(*RecommenderBatches(spec).inputs(0, 0, 4)).backward()
    assert set(rec.table_modules()) == {users, items}


def test_a_loss_over_several_classes_reads_class_labels(tmp_path):
    spec = model_spec(write(tmp_path, NCF_LIKE.format(users="u", items="i", keys="k", classes=3)))
    ids, dense, labels = RecommenderBatches(spec).inputs(0, 0, 16)
    assert labels.dtype == torch.int64 and set(labels.tolist()) <= {0, 1, 2}
    Recommender(spec)(ids, dense, labels).backward()


def test_refusals_name_the_file_as_given(tmp_path):
    path = write(tmp_path, NCF_LIKE.format(users="u", items="i", keys="k", classes=1).replace(
        "in: 8, out: 1}", "in: 8, out: 2}"))                     # 2 logits, 1 class
    with pytest.raises(InputError, match=rf"^--model {path}: calibrate cannot run whole training steps"):
        stack_plan(model_spec(path))

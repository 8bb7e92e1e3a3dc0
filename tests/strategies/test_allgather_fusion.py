"""allgather sends a table's indices and rows as separate calls, joins the tables whose
lookups run side by side into one call per kind (Horovod's tensor fusion, by dtype, up to
HOROVOD_FUSION_THRESHOLD), and under PyTorch with coalesced rows sends the counts first."""

import pytest

from embsim.engine.run import SimulationConfig, simulate
from embsim.strategies.allgather import HOROVOD_FUSION_BYTES, fused_groups, group_calls
from embsim.workload import load_model

OE = "embsim/validation_data/rankings/models/oe-wdl-criteo-9.yaml"   # 52 tables side by side


def run(model, gpus=2, batch=512, **options):
    return simulate(SimulationConfig(topology=f"pcie-rtx3090:1x{gpus}", model=model, batch=batch,
                                     strategy="allgather", strategy_options=options, iterations=2,
                                     efficiency_baseline=False))


def sent(tables) -> dict:
    return {t.layer: t.unique_per_gpu for t in tables}


class Table:
    def __init__(self, table, layer, unique):
        self.table, self.layer, self.unique_per_gpu, self.lookups_per_gpu = table, layer, unique, unique


def test_tables_read_side_by_side_share_their_calls():
    model = load_model(OE, batch=512)
    tables = [Table(t.name, next(l.name for l in model.layers if l.table == t.name), 10)
              for t in model.tables]
    quick = {l.name: 1e-6 for l in model.layers}             # every backward 1 us
    groups = fused_groups(model, tables, 2, quick, sent(tables))
    assert len(groups) == 1 and len(groups[0]) == len(tables)
    # 2 ms of backward between the wide and the deep lookups: two Horovod cycles apart
    slow = {**quick, "linear_dense": 2e-3}
    assert [len(g) for g in fused_groups(model, tables, 2, slow, sent(tables))] == [26, 26]
    # backward order: the group is ready when its first-in-forward table's backward ends
    assert groups[0][-1].layer == min((t.layer for t in tables),
                                      key=[l.name for l in model.layers].index)
    # one call per kind for all 52 tables; under TensorFlow (the file's framework) no counts
    assert run(OE).comm_count["all_gather"] == 2
    assert run(OE, gather_rows="lookups").comm_count["all_gather"] == 2


def test_vocabularies_apart_in_the_model_go_apart():
    # the translation model's target vocabulary's backward ends before the encoder's runs:
    # its rows go then, not with the source's at the end
    model = load_model("nmt-iwslt", batch=8, seq=16)
    tables = [Table(t.name, next(l.name for l in model.layers if l.table == t.name), 10)
              for t in model.tables]
    encoder = {l.name: (2e-4 if l.name.startswith("encoder") else 1e-6) for l in model.layers}
    assert [[t.table for t in g] for g in fused_groups(model, tables, 2, encoder, sent(tables))] == \
        [["target_word"], ["source_word"]]
    # simulated: the target table is tied to the full-softmax output, so its gradient is dense
    # (AllReduced); the source table's coalesced rows go under PyTorch as counts, indices, rows
    r = simulate(SimulationConfig(topology="pcie-rtx3090:1x2", model="nmt-iwslt", batch=8, seq=16,
                                  strategy="allgather", iterations=2, efficiency_baseline=False))
    assert r.comm_count["all_gather"] == 3


def test_the_fusion_threshold_cuts_a_group():
    model = load_model(OE, batch=512)
    names = [t.name for t in model.tables]
    row = model.table(names[0]).dim * model.table_bytes
    big = HOROVOD_FUSION_BYTES / (8 * row) * 0.6          # 60 % of the threshold each, on 8 GPUs
    tables = [Table(n, next(l.name for l in model.layers if l.table == n), big) for n in names[:3]
              if model.table(n).dim * model.table_bytes == row]
    quick = {l.name: 1e-6 for l in model.layers}
    assert [len(g) for g in fused_groups(model, tables, 8, quick, sent(tables))] == [1] * len(tables)
    assert [len(g) for g in fused_groups(model, tables, 2, quick, sent(tables))] == [len(tables)]


def test_a_groups_calls_carry_every_tables_bytes():
    model = load_model(OE, batch=512)
    tables = [Table(t.name, next(l.name for l in model.layers if l.table == t.name), 7)
              for t in model.tables]
    sent = {t.layer: 7 for t in tables}
    calls = group_calls(tables, sent, model, 4, counts_first=True)
    assert [c.name.split(":")[0] for c in calls] == ["allgather-count", "allgather-index", "allgather"]
    assert {c.layer for c in calls} == {tables[-1].layer}
    pairs = sum(4 * 7 * model.row_bytes(t.table) for t in tables)     # every (index, row) pair
    assert calls[1].nbytes + calls[2].nbytes == pytest.approx(pairs)
    assert calls[0].nbytes == 4 * 8 * len(tables)
    assert len(group_calls(tables, sent, model, 4, counts_first=False)) == 2


def test_the_groups_tables_step_on_the_op_that_waits_for_its_calls():
    r = run(OE, gpus=2)
    model = load_model(OE, batch=512)
    lookups = {l.name for l in model.layers if l.kind == "embedding"}
    updates = {c.name.split(":", 1)[1]: c for c in r.run.compute
               if c.kind == "update" and c.iteration == 1 and c.name.split(":", 1)[1] in lookups}
    busy = [name for name, c in updates.items() if c.work > 0]
    # one group: every table's sparse step on its carrier, the group's first table forward
    assert busy == [next(l.name for l in model.layers if l.kind == "embedding")]
    gathers = [c for c in r.run.comm if c.iteration == 1 and c.op == "all_gather"]
    assert updates[busy[0]].start >= max(c.end for c in gathers)

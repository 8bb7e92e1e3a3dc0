"""EmbRace's sharding and dedup options: bytes by hand from the token statistics."""

import pytest

from embsim.engine.run import SimulationConfig, simulate
from embsim.errors import InputError


def run(**kw):
    return simulate(SimulationConfig(topology="pcie-rtx3090:4x4", model="lstm-lm1b", strategy="embrace",
                                     iterations=3, efficiency_baseline=False, **kw))


def test_dedup_sends_each_distinct_row_once():
    plain, dedup = run(), run(strategy_options={"dedup": "on"})
    a2a = lambda r: {c.name: c.nbytes for c in r.run.comm if c.iteration == 1 and c.op == "alltoall"}
    note = next(n for n in dedup.notes if "dedup" in n)
    distinct, read = (float(x.replace(",", "")) for x in (note.split(": ")[1].split(" distinct of ")[0],
                                                          note.split(" distinct of ")[1].split(" rows")[0]))
    for name, nbytes in a2a(plain).items():
        assert a2a(dedup)[name] == pytest.approx(nbytes * distinct / read, rel=1e-3)
    assert any(c.name == "extra:embrace-dedup:word_embedding" for c in dedup.run.compute)
    with pytest.raises(InputError, match="dedup"):
        run(strategy_options={"dedup": "maybe"})


def test_hashed_rows_are_far_less_skewed_than_blocks():
    hashed, blocks = run(strategy_options={"shard": "hashed"}), run(strategy_options={"shard": "rows"})
    skew = lambda r: float(next(n for n in r.notes if "hottest shard" in n).split("(")[1].split("x")[0])
    assert 1.0 < skew(hashed) < 2.0 < 8.0 < skew(blocks)
    assert hashed.step_time < blocks.step_time


def test_row_blocks_of_a_table_in_runs_match_its_rows():
    # a large table's cold rows come in runs (workload.row_groups): block shares and
    # distinct rows per block must be what the expanded per-row arrays give
    import numpy as np
    from embsim.strategies.row_split import row_block_shares, row_block_unique

    counts = np.array([1] * 40 + [7, 13, 50, 90, 200], dtype=np.int64)
    w = np.random.default_rng(1).random(counts.size)
    probs = w / float(np.dot(w, counts))
    rows = np.repeat(probs, counts)
    for n in (1, 3, 8):
        assert np.allclose(row_block_shares(probs, n, counts), row_block_shares(rows, n), rtol=1e-12)
        assert np.allclose(row_block_unique(probs, n, 500.0, counts), row_block_unique(rows, n, 500.0),
                           rtol=1e-12)


def dlrm(**options):
    return simulate(SimulationConfig(topology="dgx-a100:1x8", model="dlrm-tf2-criteo-t3", strategy="embrace",
                                     batch=8192, iterations=2, efficiency_baseline=False,
                                     strategy_options=options))


def test_table_wise_placement_runs_one_fused_alltoallv_per_direction():
    cols, tables = dlrm(), dlrm(shard="tables")
    a2a = lambda r: sorted(c.name for c in r.run.comm if c.iteration == 1 and c.op == "alltoall")
    assert len(a2a(cols)) == 2 * 26                       # per table, forward and backward
    assert a2a(tables) == ["embrace-bwd:tables", "embrace-fwd:tables", "embrace-ids:tables"]
    fwd = lambda r: sum(c.nbytes for c in r.run.comm if c.iteration == 1 and c.name.startswith("embrace-fwd"))
    assert fwd(tables) == pytest.approx(fwd(cols), rel=1e-9)    # the same vectors, fused
    note = next(n for n in tables.notes if "shard=tables" in n)
    assert "26 tables whole on 8 GPUs" in note and "4 at most per GPU" in note
    # the GPU holding the largest table (48.9M of 177.9M rows) holds it whole
    assert tables.memory.params > 0.27 * 177_944_291 * 128 * 4
    assert tables.memory.params > 2 * cols.memory.params


def test_table_wise_refuses_a_table_a_head_also_reads():
    with pytest.raises(InputError, match="shard=tables: table word is also read by layer softmax"):
        run(strategy_options={"shard": "tables"})


def test_model_parallel_bottom_mlp_runs_on_gpu0_over_the_global_batch():
    data, model = dlrm(shard="tables"), dlrm(shard="tables", bottom_mlp="model")
    note = next(n for n in model.notes if "shard=tables" in n)
    # DLE: on more than 4 GPUs GPU 0 holds no table; 26 tables over the other 7
    assert "26 tables whole on 7 GPUs, the dense layers before them on GPU 0" in note
    from embsim.workload import load_model
    m = load_model("dlrm-tf2-criteo-t3", batch=8192)
    bottom = sum(m.layer(f"bottom_mlp{i}").params * m.grad_elem_bytes(m.layer(f"bottom_mlp{i}")) for i in range(3))
    reduced = lambda r: sum(c.nbytes for c in r.run.comm if c.iteration == 1 and c.op == "all_reduce")
    assert reduced(data) - reduced(model) == pytest.approx(bottom)    # model parallel: not all-reduced
    fwd = lambda r: sum(c.nbytes for c in r.run.comm if c.iteration == 1 and c.name == "embrace-fwd:tables")
    # one more vector of the tables' width per sample, in the compute dtype (fp32 here)
    assert fwd(model) - fwd(data) == pytest.approx(8192 * 128 * 4)
    with pytest.raises(InputError, match="bottom_mlp: only with shard=tables"):
        dlrm(bottom_mlp="model")
    with pytest.raises(InputError, match="bottom_mlp='x'"):
        dlrm(shard="tables", bottom_mlp="x")


def test_embrace_2d_refuses_the_fused_table_wise_alltoallv():
    with pytest.raises(InputError, match="embrace-2d with --strategy embrace --option shard=tables"):
        simulate(SimulationConfig(topology="dgx-a100:1x8", model="dlrm-tf2-criteo-t3", strategy="embrace",
                                  scheduler="embrace-2d", batch=8192, iterations=2,
                                  efficiency_baseline=False, strategy_options={"shard": "tables"}))


def test_rows_cast_before_the_exchange_halve_its_bytes_under_amp():
    fwd = lambda r: sum(c.nbytes for c in r.run.comm if c.iteration == 1 and c.name.startswith("embrace-fwd"))
    for shard in ("cols", "tables"):
        cfg = dict(topology="dgx-a100:1x8", model="dlrm-tf2-criteo-t3", strategy="embrace", batch=8192,
                   iterations=2, efficiency_baseline=False, dtype="fp16")
        table = simulate(SimulationConfig(**cfg, strategy_options={"shard": shard}))
        cast = simulate(SimulationConfig(**cfg, strategy_options={"shard": shard, "alltoall_dtype": "compute"}))
        # the zoo's tables stay FP32 under autocast; the cast rows are fp16
        assert fwd(cast) == pytest.approx(fwd(table) / 2)
    with pytest.raises(InputError, match="alltoall_dtype='x'"):
        dlrm(alltoall_dtype="x")


def test_model_parallel_input_drops_the_id_exchange_and_nothing_else():
    ids = lambda r: [c for c in r.run.comm if c.name.startswith("embrace-ids")]
    vectors = lambda r: sum(c.nbytes for c in r.run.comm if c.iteration == 1 and c.name.startswith("embrace-fwd"))
    for shard in ("cols", "tables"):
        cfg = dict(topology="dgx-a100:1x8", model="dlrm-tf2-criteo-t3", strategy="embrace", batch=8192,
                   iterations=2, efficiency_baseline=False)
        data = simulate(SimulationConfig(**cfg, strategy_options={"shard": shard}))
        model = simulate(SimulationConfig(**cfg, strategy_options={"shard": shard, "input": "model"}))
        assert ids(data) and not ids(model)
        assert not any(c.name.startswith("extra:embrace-ids") for c in model.run.compute)
        assert vectors(model) == vectors(data) > 0
        assert model.step_time < data.step_time
    with pytest.raises(InputError, match="input='x'"):
        dlrm(input="x")


def test_merlin_memory_balanced_placement_slices_the_big_tables_and_keeps_one_exchange():
    cfg = dict(topology="dgx-a100:1x8", model="merlin-synthetic-small", strategy="embrace", batch=8192,
               iterations=2, efficiency_baseline=False)
    opts = {"shard": "tables", "input": "model", "placement": "memory_balanced"}
    whole = simulate(SimulationConfig(**cfg, strategy_options=opts))
    sliced = simulate(SimulationConfig(**cfg, strategy_options={**opts, "column_slice_threshold": 1280 * 1048576}))
    fwd = lambda r: [c for c in r.run.comm if c.iteration == 1 and c.name.startswith("embrace-fwd")]
    # one fused alltoallv a direction; the same vectors in total however the columns are cut
    assert len(fwd(whole)) == len(fwd(sliced)) == 1
    assert fwd(sliced)[0].nbytes == pytest.approx(fwd(whole)[0].nbytes)
    # the two 50M x 32 tables (1.6e9 elements) are each cut in two
    note = next(n for n in sliced.notes if "memory_balanced" in n)
    assert "(2 cut into 4 column slices)" in note
    with pytest.raises(InputError, match="only with placement=memory_balanced"):
        dlrm(shard="tables", column_slice_threshold=1000)
    with pytest.raises(InputError, match="only with shard=tables"):
        dlrm(placement="memory_balanced")
    with pytest.raises(InputError, match="placement='x'"):
        dlrm(shard="tables", placement="x")


def test_fused_cols_exchange_moves_the_same_bytes_in_one_alltoallv_per_direction():
    per_table, fused = dlrm(), dlrm(exchange="fused")
    a2a = lambda r: {c.name: c.nbytes for c in r.run.comm if c.iteration == 1 and c.op == "alltoall"}
    assert sorted(a2a(fused)) == ["embrace-bwd:tables", "embrace-fwd:tables", "embrace-ids:tables"]
    vectors = sum(b for name, b in a2a(per_table).items() if name.startswith("embrace-fwd:"))
    assert a2a(fused)["embrace-fwd:tables"] == pytest.approx(vectors, rel=1e-9)
    assert a2a(fused)["embrace-bwd:tables"] == pytest.approx(vectors, rel=1e-9)
    # the even split: no owner busier than another, every GPU holds 1/N of every table
    assert any("columns split evenly over 8 GPUs" in n and "looks up 1.00x" in n for n in fused.notes)
    assert any("exchange=per_table: 26 tables" in n for n in per_table.notes)
    assert not any("exchange=per_table" in n for n in fused.notes)


def test_fused_cols_exchange_pays_one_fixed_cost_instead_of_one_per_table():
    # 55 small tables over two nodes: 110 latency-bound collectives a step per table
    # (PyTorch's coalesce, not the zoo's TensorFlow dedup, which every cols owner runs over
    # all ids of every table: the exchange alone is compared)
    kw = dict(topology="dgx-a100:2x8", model="merlin-synthetic-tiny", strategy="embrace", batch=4096,
              iterations=2, efficiency_baseline=False,
              model_overrides={"optimizer": {"sparse_dedup": "coalesce"}})
    per_table = simulate(SimulationConfig(**kw))
    fused = simulate(SimulationConfig(**kw, strategy_options={"exchange": "fused"}))
    assert fused.step_time < 0.5 * per_table.step_time


@pytest.mark.parametrize("shard", ["hashed", "rows"])
def test_fused_row_exchange_moves_the_per_table_vectors_in_one_alltoallv_per_direction(shard):
    per_table, fused = dlrm(shard=shard), dlrm(shard=shard, exchange="fused")
    a2a = lambda r: {c.name: c.nbytes for c in r.run.comm if c.iteration == 1 and c.op == "alltoall"}
    assert sorted(a2a(fused)) == ["embrace-bwd:tables", "embrace-fwd:tables", "embrace-id-counts:tables",
                                  "embrace-ids:tables"]
    assert a2a(fused)["embrace-id-counts:tables"] == 8 * 4         # one uint32 per peer
    vectors = sum(b for name, b in a2a(per_table).items() if name.startswith("embrace-fwd:"))
    assert len([n for n in a2a(per_table) if n.startswith("embrace-fwd:")]) == 26
    assert a2a(fused)["embrace-fwd:tables"] == pytest.approx(vectors, rel=1e-9)
    assert a2a(fused)["embrace-bwd:tables"] == pytest.approx(vectors, rel=1e-9)
    # each GPU sends each owner only the ids it owns: one batch's ids in all, not n batches'
    ids = 26 * 8192 * 8
    assert a2a(fused)["embrace-ids:tables"] == pytest.approx(ids, rel=1e-9)
    gathered = sum(c.nbytes for c in per_table.run.comm if c.iteration == 1 and c.op == "all_gather"
                   and c.name.startswith("embrace-ids"))
    assert gathered == pytest.approx(8 * ids, rel=1e-9)
    # every GPU holds 1/8 of every table's rows
    assert fused.memory.params == pytest.approx(per_table.memory.params, rel=0.01)
    note = next(n for n in fused.notes if "exchange=fused" in n)
    assert "26 tables' rows " + ("hashed" if shard == "hashed" else "in contiguous blocks") in note


def test_a_fused_row_exchange_swaps_counts_first_and_reorders_what_it_receives():
    # SOK's All2AllInput: the id counts go first and the host reads them back before the
    # ids leave; All2AllOutput puts the received rows in batch order (and the gradients in
    # owner order before they leave). A fixed-size exchange (cols, tables) needs neither.
    r = dlrm(shard="hashed", exchange="fused")
    comm = {c.name: c for c in r.run.comm if c.iteration == 1}
    ops = {c.name: c for c in r.run.compute if c.iteration == 1}
    counts, ids = comm["embrace-id-counts:tables"], comm["embrace-ids:tables"]
    copy = next(c for n, c in ops.items() if n.startswith("extra:embrace-id-counts:"))
    assert counts.end <= copy.start + 1e-12 and copy.end <= ids.ready + 1e-12
    fwd, bwd = comm["embrace-fwd:tables"], comm["embrace-bwd:tables"]
    reorder = next(c for n, c in ops.items() if n.startswith("extra:embrace-reorder:"))
    gather = next(c for n, c in ops.items() if n.startswith("extra:embrace-reorder-bwd:"))
    assert fwd.end <= reorder.start + 1e-12 and gather.end <= bwd.ready + 1e-12
    for fixed in (dlrm(exchange="fused"), dlrm(shard="tables")):
        names = {c.name for c in fixed.run.comm} | {c.name for c in fixed.run.compute}
        assert not any("id-counts" in n or "reorder" in n for n in names)


def test_row_blocks_load_the_busiest_owner_more_than_hashed_rows():
    look = lambda r: float(next(n for n in r.notes if "busiest owner looks up" in n)
                           .split("looks up ")[1].split("x")[0])
    hashed, blocks = dlrm(shard="hashed", exchange="fused"), dlrm(shard="rows", exchange="fused")
    assert 1.0 < look(hashed) < look(blocks)


@pytest.mark.parametrize("options", [{"shard": "hashed"}, {"shard": "hashed", "exchange": "fused"},
                                     {"shard": "tables"}, {}])
def test_dedup_expands_the_distinct_rows_back_and_merges_their_gradients(options):
    # a GPU that sent each distinct row once gathers them back to one per lookup before the
    # next layer, and sums the lookups' gradients into them before the backward alltoall
    r = dlrm(dedup="on", **options)
    ops = {c.name: c for c in r.run.compute if c.iteration == 1}
    expand = [c for n, c in ops.items() if n.startswith("extra:embrace-expand:")]
    merge = [c for n, c in ops.items() if n.startswith("extra:embrace-merge:")]
    assert expand and merge and len(expand) == len(merge)
    assert all(c.end > c.start for c in expand + merge)
    fwd = [c for c in r.run.comm if c.iteration == 1 and c.name.startswith("embrace-fwd:")]
    # the expansion waits for the vectors: it starts no earlier than the first of them lands
    assert min(c.start for c in expand) >= min(c.end for c in fwd) - 1e-12
    assert not any(n.startswith("extra:embrace-expand:") for n in
                   (c.name for c in dlrm(**options).run.compute))


@pytest.mark.parametrize("options", [{"shard": "hashed"}, {"shard": "hashed", "exchange": "fused"}, {}])
def test_with_dedup_an_owner_looks_up_and_scatters_only_the_distinct_rows_it_receives(options):
    plain, dedup = dlrm(**options), dlrm(dedup="on", **options)
    seconds = lambda r, kind: {c.name: c.end - c.start for c in r.run.compute
                               if c.iteration == 1 and c.kind == kind and c.cls == r.run.classes[0].name}
    note = next(n for n in dedup.notes if "distinct of" in n) if not options.get("exchange") else None
    share = {}
    for name, t in seconds(dedup, "fwd").items():
        if "_lookup" in name:
            share[name] = t / seconds(plain, "fwd")[name]
    # every lookup layer's own time shrinks to its table's distinct share (< 1)
    assert len(share) == 26 and all(0.0 < v < 1.0 for v in share.values())
    if note:      # the per-table note's distinct share is cat_0's
        distinct, read = (float(x.replace(",", "")) for x in (note.split(": ")[1].split(" distinct of ")[0],
                                                              note.split(" distinct of ")[1].split(" rows")[0]))
        assert share["fwd:cat_0_lookup"] == pytest.approx(distinct / read, rel=1e-3)   # the note rounds


@pytest.mark.parametrize("options, message", [
    ({"exchange": "sometimes"}, "exchange='sometimes': expected per_table or fused"),
    # shard=tables takes neither value (probe U, B3: per_table was accepted and changed nothing)
    ({"exchange": "fused", "shard": "tables"}, "exchange=fused: only with shard=cols, rows or hashed; "
                                               "shard=tables always fuses"),
    ({"exchange": "per_table", "shard": "tables"}, "exchange=per_table: only with shard=cols, rows or "
                                                   "hashed; shard=tables always fuses"),
])
def test_fused_exchange_refusals(options, message):
    with pytest.raises(InputError, match=message):
        dlrm(**options)


def test_the_exchange_reported_is_the_one_that_runs():
    """probe U, B3: under shard=tables the options said exchange=per_table (default) while one
    fused alltoallv per direction ran; the value is now what runs, implied by shard=tables."""
    from embsim.strategies.embrace import EmbRaceOptions
    assert EmbRaceOptions().exchange == "per_table"
    assert EmbRaceOptions(shard="tables").exchange == "fused"
    assert EmbRaceOptions(shard="hashed", exchange="fused").exchange == "fused"
    assert EmbRaceOptions(shard="tables").implied() == {"exchange": "shard=tables always fuses"}
    assert EmbRaceOptions(shard="cols").implied() == {}
    r = dlrm(shard="tables")
    assert r.options_used.text("strategy").endswith(
        "column_slice_threshold=unset (default); exchange=fused (shard=tables always fuses)")
    assert r.options_used.as_json()["strategy"]["options"]["exchange"] == {
        "value": "fused", "from": "implied", "why": "shard=tables always fuses"}
    # one alltoallv per direction for all tables, as said
    fwd = {c.name for c in r.run.comm if c.iteration == 1 and c.op == "alltoall"}
    assert len(fwd) <= 3
    assert "exchange=per_table (default)" in dlrm().options_used.text("strategy")


def test_embrace_2d_refuses_a_fused_exchange():
    with pytest.raises(InputError, match="exchange=fused"):
        simulate(SimulationConfig(topology="dgx-a100:1x8", model="dlrm-tf2-criteo-t3", strategy="embrace",
                                  scheduler="embrace-2d", batch=8192, iterations=2, efficiency_baseline=False,
                                  strategy_options={"exchange": "fused"}))

"""S2 Reducer as its authors' code sizes it: hand-computed sketch and bitmap bytes."""

import pytest

from embsim.engine.run import SimulationConfig, simulate
from embsim.errors import InputError
from embsim.strategies.s2sketch import (collision_free_fraction, colliders_per_element,
                                        published_buckets, published_bytes)


def test_published_sizes_by_hand():
    # GNMT's shared table, 32,320 x 1024, sparsity 0.02, rank 0.25: c = int(165,478.4)
    assert published_buckets(32320, 1024, 0.02, 0.25) == 165478
    sketch, bitmap = published_bytes(32320, 1024, 0.02, 0.25)
    assert sketch == 165478 * 4 and bitmap == 32320 * 4
    # 0.5 % of the table's elements, as the issue states
    assert sketch / (32320 * 1024 * 4) == pytest.approx(0.005, rel=1e-5)


def test_collisions_by_hand():
    assert collision_free_fraction(1, 10) == 1.0                 # a lone element is exact
    assert collision_free_fraction(11, 10) == pytest.approx(2.718281828 ** -1)
    assert colliders_per_element(21, 10) == pytest.approx(2.0)


def run(**kw):
    return simulate(SimulationConfig(iterations=3, efficiency_baseline=False, **kw))


def test_two_allreduces_of_the_published_size_plus_the_dense_part():
    r = run(topology="dgx-h100:2x8", model="gnmt", strategy="s2reducer")
    ar = run(topology="dgx-h100:2x8", model="gnmt", strategy="allreduce")
    sketch, bitmap = published_bytes(32320, 1024, 0.02, 0.25)
    table = 32320 * 1024 * 4
    # busbw bytes per GPU: 2 (N-1)/N of each AllReduce
    factor = 2 * 15 / 16
    saved = ar.comm_bytes_per_gpu["all_reduce"] - r.comm_bytes_per_gpu["all_reduce"]
    assert saved == pytest.approx(factor * (table - sketch - bitmap), rel=1e-9)
    sent = {c.name: c.nbytes for c in r.run.comm if c.iteration == 0}
    assert sent["s2-sketch"] == sketch          # all tables' sketches in one AllReduce (one table)
    assert sent["s2-bitmap"] == bitmap
    assert any("decode exactly" in n for n in r.notes)


def test_the_authors_trainer_syncs_after_the_backward():
    """fp_optimizers.py: loss.backward() returns, then reducer.reduce: every table encoded,
    one AllReduce of all sketches, one of all bitmaps, then the rest packed beside the decode.
    The DDP-style overlap is --option sync=overlapped."""
    r = run(topology="2x8", model="gnmt", strategy="s2reducer")
    late = run(topology="2x8", model="gnmt", strategy="s2reducer", strategy_options={"sync": "overlapped"})
    comm = sorted((c for c in r.run.comm if c.iteration == 1), key=lambda c: c.start)
    bwd_end = max(c.end for c in r.run.compute
                  if c.iteration == 1 and c.name.startswith("bwd:") and c.cls == r.run.classes[0].name)
    assert all(c.start >= bwd_end for c in comm)                # nothing during the backward
    assert [c.name for c in comm[:2]] == ["s2-sketch", "s2-bitmap"]
    assert late.step_time < r.step_time                         # the overlap hides the dense part
    with pytest.raises(InputError, match="sync"):
        run(topology="2x8", model="tiny-lm", strategy="s2reducer", strategy_options={"sync": "x"})


def test_sparsity_and_rank_are_options():
    small = run(topology="2x8", model="lstm-lm1b", batch=16, strategy="s2reducer",
                strategy_options={"sparsity": 0.01, "rank": 0.001})    # the authors' LSTM values
    big = run(topology="2x8", model="lstm-lm1b", batch=16, strategy="s2reducer")
    assert small.comm_bytes_per_gpu["all_reduce"] < big.comm_bytes_per_gpu["all_reduce"]
    with pytest.raises(InputError, match="sparsity"):
        run(topology="2x8", model="tiny-lm", strategy="s2reducer", strategy_options={"sparsity": 0})
    with pytest.raises(InputError, match="sizing"):
        run(topology="2x8", model="tiny-lm", strategy="s2reducer", strategy_options={"sizing": "x"})


def test_the_authors_encode_and_decode_pass_over_the_whole_dense_table():
    """Sketch_Embed_Reducer.reduce: to_sparse() scans every element of nn.Embedding's dense
    gradient; decompress(...).to_dense() writes a zeroed vocab x dim tensor; four host syncs
    split the encode (nonzero, unique_consecutive, bincount's max) and three the decode."""
    from embsim.strategies.s2_kernels import decode_parts, encode_parts, hash_table_bytes
    rows, dim, touched, union, c = 32320, 1024, 3000, 14000, 165478
    enc, dec = encode_parts(rows, dim, touched, c, 4), decode_parts(rows, dim, union, 4)
    assert len(enc) == 4 and len(dec) == 3
    assert enc[0][0].name == "s2.to_sparse.nonzero_count" and enc[0][0].nbytes == rows * dim * 4
    zero = next(k for k in dec[2] if k.name == "s2.to_dense.zeros")
    assert zero.nbytes == rows * dim * 4
    assert next(k for k in enc[3] if k.name == "s2.bincount.atomic_add").rows == touched * dim
    assert hash_table_bytes(rows, dim) == rows * dim * 12       # int64 bucket + fp32 sign


def test_published_sizing_steps_the_dense_table_and_holds_the_hash_tables():
    kw = dict(topology="2x8", model="lstm-lm1b", batch=16, strategy="s2reducer")
    authors = run(**kw)
    union = run(**kw, strategy_options={"sizing": "union"})
    # the dense update of all 793k rows and the to_sparse / to_dense passes are the authors'
    assert authors.metrics.compute > union.metrics.compute
    from embsim.workload import load_model
    word = load_model("lstm-lm1b").table("word")
    assert authors.memory.by_component["s2 hash tables (word)"] == word.vocab * word.dim * 12
    assert "s2 hash tables (word)" not in union.memory.by_component


@pytest.mark.parametrize("value", [2, 1.0000001, 1e15, 0, -0.5])
def test_sparsity_is_a_fraction(value):
    """sparsity is the authors' embedding_sparsity, the share of the gradient's elements
    expected nonzero: above 1 (sparsity=1e15 printed a 2e17 MB sketch) it is refused."""
    from embsim.strategies.s2reducer import S2ReducerOptions
    with pytest.raises(InputError, match=r"^--option sparsity=.*must be a fraction in \(0, 1\]"):
        S2ReducerOptions(sparsity=value)


def test_sparsity_one_is_the_whole_gradient():
    from embsim.strategies.s2reducer import S2ReducerOptions
    assert S2ReducerOptions(sparsity=1).sparsity == 1.0
    r = run(topology="2x8", model="lstm-lm1b", batch=16, strategy="s2reducer", strategy_options={"sparsity": 1})
    assert any("(V x D x 1 x 0.25)" in n for n in r.notes), r.notes

"""ps --option dense_vocab_below (OpenEmbedding's Cache Local): tables of fewer rows are
replicated and AllReduced densely with the dense layers, the rest pushed and pulled through
the servers. The bytes each path moves, the default unchanged, and bad values refused."""

import pytest

from embsim.engine.run import SimulationConfig, simulate
from embsim.errors import InputError
from embsim.workload import load_model

MODEL = "embsim/validation_data/rankings/models/oe-wdl-criteo-9.yaml"
BATCH = 512
BASE = {"servers": "colocated", "local_aggregation": False, "pull": "gpu"}


def run(**options):
    return simulate(SimulationConfig(topology="pcie-rtx3090:1x2", model=MODEL, batch=BATCH,
                                     strategy="ps", strategy_options={**BASE, **options},
                                     iterations=2, efficiency_baseline=False))


def test_small_tables_move_from_the_servers_to_the_dense_allreduce():
    model = load_model(MODEL, batch=BATCH)
    small = [t for t in model.tables if t.vocab < 4096]
    # Criteo's fields under 4,096 values: C1 C2 C5 C6 C8 C9 C13 C14 C17 C19 C20 C22 C23 C25,
    # each with its deep (dim 9) and linear (dim 1) table
    assert len(small) == 28 and sum(t.vocab for t in small) == 2 * 8554
    dense_bytes = sum(t.vocab * t.dim * 4 for t in small)      # fp32 gradients, vocab x dim
    plain, cached = run(), run(dense_vocab_below=4096)
    # a 2-GPU ring AllReduce sends 2 (N-1) / N = 1 x the tensor per GPU
    grew = cached.comm_bytes_per_gpu["all_reduce"] - plain.comm_bytes_per_gpu["all_reduce"]
    assert grew == pytest.approx(dense_bytes, rel=1e-9)
    # the small tables' rows leave the push: what is left is the large tables' own rows
    assert cached.comm_bytes_per_gpu["ps_push"] < plain.comm_bytes_per_gpu["ps_push"]
    note = next(n for n in cached.notes if "Cache Local" in n)
    assert "28 of 52 sparse tables under 4,096 rows (17,108 rows in all)" in note
    # a threshold no table is under changes nothing
    none = run(dense_vocab_below=1)
    assert none.comm_bytes_per_gpu == plain.comm_bytes_per_gpu and none.step_time == plain.step_time


def test_push_bytes_are_the_served_tables_rows():
    cached = run(dense_vocab_below=4096)
    every = run(dense_vocab_below=10**9)          # every table dense: nothing to push
    assert "ps_push" not in every.comm_bytes_per_gpu or every.comm_bytes_per_gpu["ps_push"] == 0
    assert cached.comm_bytes_per_gpu["ps_push"] > 0


@pytest.mark.parametrize("value", [0, -5, 2.5, "many", True])
def test_a_bad_dense_vocab_below_is_a_one_line_error(value):
    with pytest.raises(InputError, match=r"^--option dense_vocab_below=.*: must be a positive integer$"):
        run(dense_vocab_below=value)

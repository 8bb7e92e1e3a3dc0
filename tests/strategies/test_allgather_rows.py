"""allgather --option gather_rows: coalesced rows (default) or one row per lookup (stock
Horovod's IndexedSlices allgather): the bytes each moves, and bad values refused."""

import pytest

from embsim.engine.run import SimulationConfig, simulate
from embsim.errors import InputError
from embsim.workload import load_model

MODEL = "embsim/validation_data/rankings/models/oe-wdl-criteo-9.yaml"
BATCH = 512


def run(**options):
    return simulate(SimulationConfig(topology="pcie-rtx3090:1x2", model=MODEL, batch=BATCH,
                                     strategy="allgather", strategy_options=options,
                                     iterations=2, efficiency_baseline=False))


def test_lookups_gather_one_row_per_lookup_and_unique_gathers_fewer():
    model = load_model(MODEL, batch=BATCH)
    # a ring AllGather sends each GPU's slice to the N-1 others: with 2 GPUs one slice per GPU,
    # every table's batch x lookups (index, row) pairs of dim x 4 + 8 bytes
    slice_bytes = sum(BATCH * model.row_bytes(t.name) for t in model.tables)
    assert slice_bytes == BATCH * 26 * (9 * 4 + 8) + BATCH * 26 * (1 * 4 + 8)
    lookups = run(gather_rows="lookups").comm_bytes_per_gpu["all_gather"]
    assert lookups == pytest.approx(slice_bytes, rel=1e-9)
    unique = run().comm_bytes_per_gpu["all_gather"]
    # the small fields (vocab 3, 4, 10, ...) repeat within a batch: coalescing removes most rows
    assert unique < 0.9 * lookups
    assert run(gather_rows="unique").comm_bytes_per_gpu["all_gather"] == unique


@pytest.mark.parametrize("value", ["coalesced", 1, None])
def test_a_bad_gather_rows_is_a_one_line_error(value):
    with pytest.raises(InputError, match=r"^--option gather_rows=.*: expected one of unique, lookups$"):
        run(gather_rows=value)


def test_a_pytorch_gpu_coalesces_its_rows_before_a_unique_gather():
    def merges(framework, gpus=2, **options):
        r = simulate(SimulationConfig(topology=f"pcie-rtx3090:1x{gpus}", model=MODEL, batch=BATCH,
                                      strategy="allgather", strategy_options=options, iterations=2,
                                      efficiency_baseline=False, model_overrides={"framework": framework}))
        return {c.name for c in r.run.compute if c.name.startswith("extra:allgather-merge:")}
    assert len(merges("pytorch")) == len(load_model(MODEL, batch=BATCH).tables)   # one per table
    assert not merges("pytorch", gather_rows="lookups")     # sent as they are
    assert not merges("pytorch", gpus=1)                    # nothing is sent
    # TensorFlow's Horovod allgathers the IndexedSlices as they are: no merge before it
    assert not merges("tensorflow")

"""embrace --option alltoall_dtype=compute says when the cast changes nothing."""

from __future__ import annotations

import pytest

from embsim.engine.run import SimulationConfig, simulate


def run(dtype, **options):
    return simulate(SimulationConfig(topology="dgx-a100:1x8", model="dlrm-tf2-criteo-t3", strategy="embrace",
                                     batch=8192, iterations=2, efficiency_baseline=False, dtype=dtype,
                                     strategy_options=options))


NOTE = "embrace: alltoall_dtype=compute changes nothing"


@pytest.mark.parametrize("shard", ["cols", "tables"])
def test_a_cast_to_the_tables_own_width_is_said_to_change_nothing(shard):
    table, cast = run("fp32", shard=shard), run("fp32", shard=shard, alltoall_dtype="compute")
    assert cast.step_time == table.step_time
    assert any(n.startswith(NOTE) and "(fp32)" in n for n in cast.notes)
    assert not any(n.startswith(NOTE) for n in table.notes)


def test_a_cast_that_narrows_the_rows_is_not():
    cast = run("fp16", alltoall_dtype="compute")
    assert not any(n.startswith(NOTE) for n in cast.notes)

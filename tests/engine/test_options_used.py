"""The strategy and scheduler options a run used and where each came from (probe F8):
bert-large's model file sets fifo's one flat DDP bucket, which no output said."""

from __future__ import annotations

import pytest

from embsim.engine.config import SimulationConfig, with_options
from embsim.errors import InputError
from embsim.engine.options_used import options_used as resolve, value_text
from embsim.engine.run import with_model_defaults


def options_used(given):
    return resolve(given, with_model_defaults(given))


def test_model_file_option_and_default_are_told_apart():
    given = with_options(SimulationConfig(topology="2x8", model="bert-large"), {"first_bucket_bytes": 2e6})
    used = options_used(given)
    fifo = {u.key: (u.value, u.source) for u in used.items if u.component == "scheduler"}
    assert fifo["bucket_bytes"] == (1e12, "model file")          # bert-large.yaml defaults.options
    assert fifo["ddp"] == ("torch-view", "model file")
    assert fifo["first_bucket_bytes"] == (2e6, "--option")        # the user's wins over the file's
    assert fifo["message_size"][1] == "default"
    assert used.text("scheduler") == ("fifo: first_bucket_bytes=2000000 (--option); bucket_bytes=1e+12, "
                                      "ddp=torch-view, hook_divides=2 (model file); "
                                      "message_size=10000000 (default)")
    assert used.text("strategy") == "allreduce: no options"
    doc = used.as_json()
    assert doc["strategy"] == {"name": "allreduce", "options": {}}
    assert doc["scheduler"]["name"] == "fifo"
    assert doc["scheduler"]["options"]["bucket_bytes"] == {"value": 1e12, "from": "model file"}


def test_numeric_scheduler_options_are_recorded():
    given = with_options(SimulationConfig(topology="1x8", model="lstm-lm1b", strategy="embrace",
                                          scheduler="priority"), {"credit_bytes": 16e6})
    used = options_used(given)
    assert used.text("scheduler") == ("priority: credit_bytes=16000000 (--option); "
                                      "partition_bytes=32000000 (default)")
    assert "shard=cols" in used.text("strategy") and "(default)" in used.text("strategy")


def test_a_bad_option_is_refused_as_the_run_would():
    with pytest.raises(InputError, match="partition_bytes"):
        options_used(SimulationConfig(strategy="embrace", scheduler="priority",
                                      scheduler_options={"partition_bytes": 1}))


def test_values_as_typed():
    assert [value_text(v) for v in (True, False, None, 32e6, 0.02, "cols", 3)] == \
        ["on", "off", "unset", "32000000", "0.02", "cols", "3"]


def test_an_option_another_option_decides_is_reported_as_implied_not_default():
    """probe U, B3: embrace shard=tables always fuses its exchange, so the options line says
    exchange=fused and why, where it said exchange=per_table (default), which did not run."""
    given = with_options(SimulationConfig(topology="2x8", model="dlrm-criteo-t3", strategy="embrace"),
                         {"shard": "tables"})
    used = options_used(given)
    exchange = next(u for u in used.items if u.key == "exchange")
    assert (exchange.value, exchange.source, exchange.why) == ("fused", "implied", "shard=tables always fuses")
    assert exchange.origin == "shard=tables always fuses"
    assert used.text("strategy") == ("embrace: shard=tables (--option); dedup=off, bottom_mlp=data, "
                                     "alltoall_dtype=table, input=data, placement=greedy, "
                                     "column_slice_threshold=unset (default); exchange=fused "
                                     "(shard=tables always fuses)")
    assert used.as_json()["strategy"]["options"]["exchange"] == {
        "value": "fused", "from": "implied", "why": "shard=tables always fuses"}
    # every other option keeps its source and no "why"
    assert used.as_json()["strategy"]["options"]["dedup"] == {"value": False, "from": "default"}
    # shard=cols: per_table is the plain default
    cols = options_used(SimulationConfig(topology="2x8", model="dlrm-criteo-t3", strategy="embrace"))
    assert "exchange=per_table (default)" in cols.text("strategy")

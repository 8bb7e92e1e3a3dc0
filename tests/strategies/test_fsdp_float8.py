"""fsdp's float8_all_gather option (torchtitan's enable_fsdp_float8_all_gather): block
weights gathered in FP8, the root's and every reduce-scatter unchanged; bad values refused."""

import pytest

from embsim.engine.context import step_context
from embsim.engine.run import SimulationConfig
from embsim.errors import InputError
from embsim.strategies import STRATEGIES
from embsim.strategies.fsdp import ROOT
from embsim.topology import load_topology
from embsim.workload import load_model

TOPOLOGY = "dgx-h100:1x8"


def plan(dtype="fp8", **options):
    m = load_model("llama3-8b", batch=1, seq=1024, dtype=dtype, amp="o2")
    cfg = SimulationConfig(topology=TOPOLOGY, model="llama3-8b", strategy="fsdp", dtype=dtype)
    ctx, _ = step_context(m, load_topology(TOPOLOGY), None, cfg, True)
    return STRATEGIES.get("fsdp").from_options(options).plan(ctx)


def sizes(p, prefix):
    return {t.name.split(":", 1)[1]: t.nbytes for t in p.sync if t.name.startswith(prefix)}


def test_block_gathers_halve_root_and_reduce_scatters_do_not():
    on, off = plan(float8_all_gather="on"), plan()
    for prefix in ("fsdp-ag-fwd:", "fsdp-ag-bwd:"):
        a, b = sizes(on, prefix), sizes(off, prefix)
        assert a.keys() == b.keys()
        for unit in a:
            assert a[unit] == (b[unit] if unit == ROOT else b[unit] / 2), (prefix, unit)
    assert sizes(on, "fsdp-rs:") == sizes(off, "fsdp-rs:")
    assert any("float8 all-gather" in n for n in on.notes)
    assert not any("float8 all-gather" in n for n in off.notes)


@pytest.mark.parametrize("value", ["maybe", 2, 0.5])
def test_bad_values_are_refused(value):
    with pytest.raises(InputError, match="float8_all_gather"):
        STRATEGIES.get("fsdp").from_options({"float8_all_gather": value})


def test_refused_without_fp8():
    with pytest.raises(InputError, match="float8_all_gather=on: needs --dtype fp8"):
        plan(dtype="bf16", float8_all_gather=True)

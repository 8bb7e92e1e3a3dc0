"""embrace-2d's options: the sizes priority refuses, and switches that change nothing."""

from __future__ import annotations

import pytest

from embsim.engine.run import SimulationConfig, simulate
from embsim.errors import InputError
from embsim.schedulers import SCHEDULERS


@pytest.mark.parametrize("key", ["partition_bytes", "credit_bytes"])
@pytest.mark.parametrize("value", [1, 1000, 65535])
def test_embrace_2d_refuses_the_sizes_priority_refuses(key, value):
    # partition_bytes=1 ran for minutes and gigabytes under embrace-2d; priority refused it
    messages = []
    for name in ("priority", "embrace-2d"):
        with pytest.raises(InputError) as err:
            SCHEDULERS.get(name).from_options({key: value})
        messages.append(str(err.value))
    assert messages[0] == messages[1] == f"--option {key}={value!r}: must be 65536..1e+15"
    assert SCHEDULERS.get("embrace-2d").from_options({key: 65536}).options.partition_bytes > 0


def notes(strategy, **options):
    r = simulate(SimulationConfig(topology="2x8", model="lstm-lm1b", strategy=strategy, scheduler="embrace-2d",
                                  iterations=2, efficiency_baseline=False,
                                  strategy_options=options, scheduler_options={"prefetch": "off"}))
    return [n for n in r.notes if n.startswith("embrace-2d:")]


@pytest.mark.parametrize("strategy,options", [("ps", {}), ("allgather", {}), ("embrace", {"input": "model"})])
def test_prefetch_off_without_an_id_exchange_says_it_changes_nothing(strategy, options):
    said = notes(strategy, **options)
    assert f"embrace-2d: prefetch=off changes nothing: --strategy {strategy} exchanges no token ids to prefetch" in said
    assert not any("parts off" in n for n in said)


def test_prefetch_off_with_an_id_exchange_is_a_part_off():
    said = notes("embrace")
    assert "embrace-2d: parts off: prefetch" in said
    assert not any("changes nothing" in n for n in said)

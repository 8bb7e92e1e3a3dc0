"""ps options that only dedicated servers take are refused with colocated ones."""

from __future__ import annotations

import pytest

from embsim.errors import InputError
from embsim.strategies import STRATEGIES


@pytest.mark.parametrize("key,value", [("server_nodes", 4), ("server_gbit", 10)])
def test_dedicated_only_options_are_refused_with_colocated_servers(key, value):
    # they were accepted and ignored: the same step time, "2 colocated servers" in the notes
    ps = STRATEGIES.get("ps")
    for given in ({key: value}, {key: value, "servers": "colocated"}):
        with pytest.raises(InputError) as err:
            ps.from_options(given)
        assert str(err.value).startswith(f"--option {key}: only with servers=dedicated")
        assert "\n" not in str(err.value)
    assert getattr(ps.from_options({key: value, "servers": "dedicated"}).options, key) == value


def test_the_summation_rate_applies_to_colocated_servers_too():
    ps = STRATEGIES.get("ps").from_options({"server_sum_gbps": 1})
    assert ps.options.servers == "colocated" and ps.options.server_sum_gbps == 1.0

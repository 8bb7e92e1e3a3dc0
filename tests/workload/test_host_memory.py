"""workload/host_memory.py: what a node's host memory must hold, checked only against a
figure the topology gives."""

from embsim.workload.host_memory import GiB, HostMemoryNeed, capacity_bytes, need_text


def test_fits_only_against_a_given_host_memory():
    assert HostMemoryNeed("servers", 3_340_400_000_000, None).fits is None
    assert HostMemoryNeed("servers", 100, 2048 * GiB).fits is True
    assert HostMemoryNeed("servers", 3_340_400_000_000, 2048 * GiB).fits is False
    assert capacity_bytes(None) is None and capacity_bytes(2048) == 2048 * GiB


def test_the_limit_is_said_the_same_way_everywhere():
    over = HostMemoryNeed("servers", 3_340_400_000_000, 2048 * GiB)
    assert need_text(over) == ("servers need 3,340.4 GB of host memory per node, node has 2,199.0 GB")
    unknown = HostMemoryNeed("servers", 45_600_000_000, None)
    assert need_text(unknown) == ("servers need 45.6 GB of host memory per node; host memory unknown: "
                                  "not checked")
    dedicated = HostMemoryNeed("servers", 45_600_000_000, 512 * GiB, where="server machine")
    assert need_text(dedicated).endswith("per server machine, server machine has 549.8 GB")


def test_json_round_trip():
    need = HostMemoryNeed("the CPU tables", 13_000_000_000, 2048 * GiB, mean_per_node=13_000_000_000)
    d = need.as_dict()
    assert d["fits"] is True and d["need_per_node_bytes"] == 13_000_000_000
    assert HostMemoryNeed.from_dict(d) == need

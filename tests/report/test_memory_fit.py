"""report/memory_fit.py: which memory limit a run fails, named."""

from embsim.report.memory_fit import failed_limits, shortfalls
from embsim.workload.host_memory import GiB, HostMemoryNeed

OVER = HostMemoryNeed("servers", 3_340_400_000_000, 2048 * GiB)


def test_each_failed_limit_is_named():
    assert shortfalls(10e9, 80e9, None) == [] and shortfalls(10e9, 80e9, HostMemoryNeed("servers", 1, None)) == []
    assert shortfalls(90e9, 80e9, None) == ["90.0 GB needed per GPU, 80.0 GB available"]
    assert shortfalls(10e9, 80e9, OVER) == ["servers need 3,340.4 GB of host memory per node, node has 2,199.0 GB"]
    assert failed_limits(90e9, 80e9, OVER) == "HBM, host"
    assert failed_limits(10e9, 80e9, OVER) == "host"
    assert failed_limits(None, None, None) == "memory"

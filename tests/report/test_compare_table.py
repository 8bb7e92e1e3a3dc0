"""report/compare_table.py: the fits column names the limit a row fails, and a line under
the table says it in full (a ps row whose servers outgrow a node's host memory)."""

import io

from rich.console import Console

from embsim.compare import CompareResult, CompareRow
from embsim.engine.config import SimulationConfig
from embsim.report.compare_table import print_matrix
from embsim.workload.host_memory import GiB, HostMemoryNeed


def test_a_row_over_the_hosts_memory_says_so():
    over = HostMemoryNeed("servers", 3_340_400_000_000, 2048 * GiB)
    rows = (CompareRow("allreduce", "fifo", step_time=10e-3, exposed_comm=1e-3, compute=9e-3,
                       comm_bytes_per_gpu=1e9, memory_per_gpu=40e9, hbm_bytes=85.9e9, fits_in_memory=True,
                       speedup=1.0),
            CompareRow("ps", "fifo", step_time=8e-3, exposed_comm=1e-3, compute=7e-3, comm_bytes_per_gpu=1e8,
                       memory_per_gpu=40e9, hbm_bytes=85.9e9, host_memory=over, fits_in_memory=False,
                       speedup=1.25))
    result = CompareResult(config=SimulationConfig(topology="2x8", model="m"), rows=rows, n_gpus=16)
    buf = io.StringIO()
    print_matrix(result, Console(file=buf, width=200))
    text = buf.getvalue()
    assert "NO (host)" in text
    assert ("does not fit: ps/fifo: servers need 3,340.4 GB of host memory per node, node has "
            "2,199.0 GB") in text
    assert "resolution: allreduce/fifo is the only fitting plan that ran" in text

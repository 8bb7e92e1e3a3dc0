"""report/compare_table.py: the fits column names the limit a row fails, and a line under
the table says it in full (a ps row whose servers outgrow a node's host memory)."""

import dataclasses
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


def test_a_row_whose_host_memory_was_not_checked_says_so_and_the_title_says_how_rows_rank():
    """probe U, M5/M6: a ps row whose servers need host memory the topology does not size read
    "yes", and the title said "ranked by step time" above a fitting row ranked before a faster
    one that does not fit."""
    unknown = HostMemoryNeed("servers", 1_661_700_000_000, None)
    rows = (CompareRow("ps", "fifo", step_time=5.13, exposed_comm=4.49, compute=0.6, comm_bytes_per_gpu=9.3e9,
                       memory_per_gpu=15.5e9, hbm_bytes=42.9e9, host_memory=unknown, fits_in_memory=True,
                       speedup=24.33),
            CompareRow("embrace", "fifo", step_time=4.96, exposed_comm=3.3, compute=1.6,
                       comm_bytes_per_gpu=40e9, memory_per_gpu=238.4e9, hbm_bytes=42.9e9,
                       fits_in_memory=False, speedup=25.2),
            CompareRow("allreduce", "fifo", step_time=124.94, exposed_comm=116.69, compute=8.0,
                       comm_bytes_per_gpu=1454e9, memory_per_gpu=3330e9, hbm_bytes=42.9e9,
                       fits_in_memory=False, speedup=1.0))
    result = CompareResult(config=SimulationConfig(topology="pcie-a100-40gb:1x8", model="m"), rows=rows, n_gpus=8)
    buf = io.StringIO()
    print_matrix(result, Console(file=buf, width=200))
    text = buf.getvalue()
    assert "m on pcie-a100-40gb:1x8 (8 GPUs), fitting rows first, by step time; speedup over" in text
    assert "ranked by step time" not in text
    ps_line = next(line for line in text.splitlines() if "ps/fifo" in line)
    assert ps_line.rstrip().endswith("yes (host not checked) │")
    assert ("resolution: ps/fifo is the only fitting plan that ran (host not checked): nothing to rank it "
            "against") in text
    # a row that keeps nothing in host memory is checked in full: plain "yes"
    from embsim.report.compare_table import fits_text
    plain = CompareRow("allreduce", "fifo", fits_in_memory=True)
    assert fits_text(plain) == "yes"
    sized = dataclasses.replace(rows[0], host_memory=HostMemoryNeed("servers", 10, 2048 * GiB))
    assert fits_text(sized) == "yes"

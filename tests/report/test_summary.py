"""report/summary.py: the simulate table. Throughputs keep significant digits when small;
DDP's bucket passes and a strategy's host memory are rows of their own."""

import dataclasses
import io

from rich.console import Console

from embsim.engine.run import SimulationConfig, simulate
from embsim.report.summary import print_summary
from embsim.workload.host_memory import GiB, HostMemoryNeed


def text_of(result) -> str:
    buf = io.StringIO()
    print_summary(result, Console(file=buf, width=200))
    return " ".join(buf.getvalue().replace("│", " ").split())


def test_small_throughputs_keep_their_digits():
    """probe: "1 samples/s" rounded 0.83 samples/s to an integer, with the noun wrong."""
    r = simulate(SimulationConfig(topology="1x2", model="tiny-lm", batch=16, seq=32, iterations=3))
    slow = dataclasses.replace(r, samples_per_s=0.834, tokens_per_s=26.7)
    assert "throughput 0.83 samples/s, 26.7 tokens/s" in text_of(slow)
    fast = dataclasses.replace(r, samples_per_s=1234.4, tokens_per_s=39_500.9)
    assert "throughput 1,234 samples/s, 39,501 tokens/s" in text_of(fast)
    # DDP's copies run on the compute stream: named under it
    assert "DDP bucket passes" in text_of(r)


def test_host_memory_row_and_the_limit_that_fails():
    r = simulate(SimulationConfig(topology="1x2", model="tiny-lm", batch=16, seq=32, iterations=3))
    need = HostMemoryNeed("servers", 3_340_400_000_000, 2048 * GiB)
    over = dataclasses.replace(r, memory=dataclasses.replace(r.memory, host=need))
    text = text_of(over)
    said = "servers need 3,340.4 GB of host memory per node, node has 2,199.0 GB"
    assert f"host memory {said}" in text and f"WARNING: does not fit: {said}." in text
    assert "WARNING" not in text_of(r)

"""Which memory limit a run fails, in words: the GPU's HBM, or the host memory of a node
that holds the strategy's parameter servers or host tables (workload.host_memory)."""

from __future__ import annotations

from ..workload.host_memory import HostMemoryNeed, need_text
from .units import human_bytes


def shortfalls(memory_per_gpu: float | None, hbm_bytes: float | None,
               host: HostMemoryNeed | None) -> list[str]:
    """One line per limit the run exceeds (none: it fits, or a limit is unknown)."""
    out = []
    if memory_per_gpu is not None and hbm_bytes is not None and memory_per_gpu > hbm_bytes:
        out.append(f"{human_bytes(memory_per_gpu)} needed per GPU, {human_bytes(hbm_bytes)} available")
    if host is not None and host.fits is False:
        out.append(need_text(host))
    return out


def failed_limits(memory_per_gpu: float | None, hbm_bytes: float | None,
                  host: HostMemoryNeed | None) -> str:
    """'HBM', 'host' or 'HBM, host': the limits a run that does not fit exceeds, for a
    table's narrow column ('memory' where the row carries neither figure)."""
    names = []
    if memory_per_gpu is not None and hbm_bytes is not None and memory_per_gpu > hbm_bytes:
        names.append("HBM")
    if host is not None and host.fits is False:
        names.append("host")
    return ", ".join(names) or "memory"

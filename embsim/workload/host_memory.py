"""Host (CPU) memory a node must hold for what a strategy keeps off its GPUs: parameter
servers' shards of the tables with their optimizer state, or tables kept in host memory.

The node's host memory comes from its topology (NodeType.host_memory_gb, or a dedicated
server machine's parameter_servers.host_memory_gb); without it the need is stated and not
checked (`fits` None), never compared against a guess.
"""

from __future__ import annotations

from dataclasses import dataclass

GiB = 2**30


@dataclass(frozen=True)
class HostMemoryNeed:
    holder: str               # what holds it: "servers", "the CPU tables"
    per_node: int             # bytes on the most loaded node (or server machine)
    capacity: float | None    # bytes of host memory there; None: the topology gives none
    where: str = "node"       # "node", or "server machine" for dedicated servers
    mean_per_node: int | None = None   # bytes on the average one, where the load is uneven

    @property
    def fits(self) -> bool | None:
        """Whether the most loaded node holds it; None: not checked (no capacity given)."""
        return None if self.capacity is None else self.per_node <= self.capacity

    def as_dict(self) -> dict:
        return {"holder": self.holder, "where": self.where, "need_per_node_bytes": self.per_node,
                "mean_per_node_bytes": self.mean_per_node,
                "host_memory_bytes": self.capacity, "fits": self.fits}

    @classmethod
    def from_dict(cls, d: dict) -> "HostMemoryNeed":
        """The inverse of as_dict (a sweep row read back from JSON)."""
        return cls(holder=d["holder"], per_node=int(d["need_per_node_bytes"]),
                   capacity=d.get("host_memory_bytes"), where=d.get("where", "node"),
                   mean_per_node=d.get("mean_per_node_bytes"))


def capacity_bytes(host_memory_gb: float | None) -> float | None:
    """A topology's host_memory_gb (GiB, as hbm_gb) in bytes; None stays None."""
    return None if host_memory_gb is None else float(host_memory_gb) * GiB


def _gb(nbytes: float) -> str:
    return f"{nbytes / 1e9:,.1f} GB"


def need_text(need: HostMemoryNeed) -> str:
    """'servers need 3,338.8 GB of host memory per node, node has 2,199.0 GB' (or '...; host
    memory unknown: not checked'): the limit, said the same way wherever it is checked."""
    text = f"{need.holder} need {_gb(need.per_node)} of host memory per {need.where}"
    if need.capacity is None:
        return text + "; host memory unknown: not checked"
    return text + f", {need.where} has {_gb(need.capacity)}"

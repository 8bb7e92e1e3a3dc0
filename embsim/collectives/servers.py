"""Push and pull between GPU workers and parameter servers, on the topology's links.

Not NCCL: every worker sends each server its share (BytePS over TCP/RDMA), all at once.
One transfer is one flow group: matrix[i, s] bytes along the route between rank i and
server s (topology.servers), so it is limited by whichever link saturates first: a
worker's NIC, the fabric, a server's NIC or a server's CPU summation (ps-cpu).
"""

from __future__ import annotations

import numpy as np

from embsim.errors import InputError
from embsim.network import Demand

from .server_demand import PUSH_OPS, colocated_transfer
from .traffic import Traffic

SERVER_OPS = ("ps_push", "ps_pull", "host_allgather", "host_lookup")


def server_transfer(topology, capacity, op: str, matrix, ranks):
    """(latency s, idle time s, demand) of one push (worker -> server) or pull
    (server -> worker); matrix is workers x servers, bytes."""
    servers = getattr(topology, "servers", None)
    if servers is None:
        raise InputError(f"{op}: the topology has no parameter servers (ps attaches them)")
    if isinstance(matrix, Traffic):
        if (servers.placement == "colocated" and tuple(ranks) == tuple(range(topology.n_gpus))
                and matrix.shape == (len(ranks), servers.count)):
            # every worker with every server: from the structure, not pair by pair
            latency, demand = colocated_transfer(topology, op, matrix)
            return latency, latency + (demand.bottleneck_time(capacity) if not demand.is_empty else 0.0), demand
        matrix = matrix.dense()
    m = np.asarray(matrix, dtype=np.float64)
    if m.shape != (len(ranks), servers.count):
        raise InputError(f"{op}: matrix must be {len(ranks)} workers x {servers.count} servers, got {m.shape}")
    parts, latency = [], 0.0
    for i, r in enumerate(ranks):
        for s in range(servers.count):
            if m[i, s] <= 0:
                continue
            route = servers.push_routes[(r, s)] if op in PUSH_OPS else servers.pull_routes[(s, r)]
            parts.append(Demand.along(route, m[i, s]))
            latency = max(latency, sum(topology.links[k].latency for k in route))
    demand = Demand.sum(parts) if parts else Demand.empty()
    return latency, latency + (demand.bottleneck_time(capacity) if parts else 0.0), demand

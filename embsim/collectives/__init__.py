"""NCCL collectives: NCCL's cost model (pure), per-link demands, plans, simulated nccl-tests.

    model = CollectiveModel(topo, algo=None, proto=None, nccl_version="2.30")
    plan = model.plan("all_reduce", 64 << 20, range(16))   # plan.time, plan.latency, plan.demand
"""

from ..curves import interp_loglog
from .model import CollectiveModel, CollectivePlan
from .shape import CommShape, comm_shape

__all__ = ["CollectiveModel", "CollectivePlan", "CommShape", "comm_shape", "interp_loglog"]

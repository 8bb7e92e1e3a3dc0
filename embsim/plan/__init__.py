"""The vocabulary of one training step, below the policies that speak it: typed op
identities, compute and communication ops, the step context strategies and schedulers
read, and the timeline a run records. Strategies and schedulers import this floor; the
engine imports them; nothing here imports upward."""

from .context import StepContext, TableTraffic
from .names import DEFERRED, OpId, Role, bwd_name, extra_name, fwd_name, stream_order, update_name
from .ops import CommOp, ComputeOp, Dep, StepPlan, StrategyPlan, SyncTensor
from .timeline import CommRecord, ComputeRecord, EngineRun, RankClass
from .traits import Payload

__all__ = ["DEFERRED", "CommOp", "CommRecord", "ComputeOp", "ComputeRecord", "Dep", "EngineRun", "OpId",
           "Payload", "RankClass", "Role", "StepContext", "StepPlan", "StrategyPlan", "SyncTensor", "TableTraffic",
           "bwd_name", "extra_name", "fwd_name", "stream_order", "update_name"]

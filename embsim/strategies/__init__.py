"""Embedding synchronisation strategies, one module each, behind STRATEGIES."""

from .base import STRATEGIES, MemoryUse, StepContext, Strategy, StrategyPlan, TableTraffic
from . import allreduce  # noqa: F401  (registers)

__all__ = ["STRATEGIES", "MemoryUse", "StepContext", "Strategy", "StrategyPlan", "TableTraffic"]

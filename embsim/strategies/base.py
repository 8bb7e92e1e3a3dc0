"""What a synchronisation strategy is: given the step's context, which state must be
communicated (SyncTensors), how long the optimizer takes on each layer under it, what
extra compute it adds, and how much memory it needs per GPU."""

from __future__ import annotations

from typing import Any

from ..plan.context import StepContext
from ..plan.ops import StrategyPlan
from ..registry import Registry


class Strategy:
    """Base class; subclasses register themselves in STRATEGIES."""

    name = "?"
    description = ""

    def __init__(self, **options: Any):
        self.options = options

    def plan(self, ctx: StepContext) -> StrategyPlan:  # pragma: no cover - interface
        raise NotImplementedError


STRATEGIES: Registry[Strategy] = Registry("strategy", "--strategy")

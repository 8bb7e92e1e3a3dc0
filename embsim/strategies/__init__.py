"""Embedding synchronisation strategies, one module each, behind STRATEGIES."""

from .base import STRATEGIES, Strategy
from . import allreduce  # noqa: F401  (registers)
from . import allgather, ps, s2reducer, embrace, fsdp, distopt  # noqa: F401  (registers)

__all__ = ["STRATEGIES", "Strategy"]

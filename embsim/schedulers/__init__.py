"""Communication schedulers, one module each, behind SCHEDULERS."""

from .base import SCHEDULERS, ChannelRule, Scheduler
from . import fifo  # noqa: F401  (registers)
from . import priority, embrace2d  # noqa: F401  (registers)

__all__ = ["SCHEDULERS", "ChannelRule", "Scheduler"]

"""Flow-level network: max-min fair sharing of link bandwidth among flow groups."""

from embsim.network.demand import Demand

__all__ = ["Demand"]

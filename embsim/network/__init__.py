"""Flow-level network: max-min fair sharing of link bandwidth among flow groups."""

from embsim.network.demand import Demand
from embsim.network.maxmin import weighted_max_min_rates
from embsim.network.network import Network, TransferRecord

__all__ = ["Demand", "Network", "TransferRecord", "weighted_max_min_rates"]

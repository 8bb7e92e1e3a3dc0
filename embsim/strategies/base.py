"""What a synchronisation strategy is: given the step's context, which state must be
communicated (SyncTensors), how long the optimizer takes on each layer under it, what
extra compute it adds, and how much memory it needs per GPU."""

from __future__ import annotations

from ..options import Configurable
from ..plan.context import StepContext
from ..plan.ops import StrategyPlan
from ..plan.traits import Payload
from ..registry import Registry


class Strategy(Configurable):
    """Base class; subclasses register themselves in STRATEGIES and declare their traits."""

    name = "?"
    description = ""
    # True: every table's gradient is dense (vocab x dim, as DDP AllReduces it), so the
    # lookup's backward is the dense kernel; False: a sparse table's gradient stays
    # (index, row) pairs, the kernel a trace times as `<layer>:sparse`.
    dense_table_gradient = False
    # what its embedding sync tensors carry (what a scheduler such as embrace-2d may split)
    embedding_payload = Payload.NONE
    # True: the forward all-gathers parameters updated by one optimizer step at the end of
    # the previous iteration (FSDP), so updates may not move into the next forward
    gathers_updated_parameters = False
    # True: its transfers a forward or backward waits for (FSDP's parameter gathers) run in
    # every micro-batch of an accumulated step; False: once per optimizer step (Megatron's
    # distributed optimizer gathers the updated parameters in the first forward only)
    gathers_every_micro_batch = True
    # True: each table's embedding traffic travels in its own collectives (what embrace-2d
    # splits per table); False: one fused collective carries every table
    per_table_embedding_traffic = True
    component_kind = "strategy"   # --option keys: an Options dataclass (embsim.options)

    def topology(self, topo):
        """The topology this strategy runs on: `topo`, or a copy with machines the
        strategy brings (parameter servers)."""
        return topo

    def link_caveats(self) -> dict[str, str]:
        """Link kind -> what its capacity rests on that nobody measured (a parameter server's
        assumed summation rate), for an output that names the link as a bottleneck; set by
        topology(). Default: none."""
        return {}

    def plan(self, ctx: StepContext) -> StrategyPlan:  # pragma: no cover - interface
        raise NotImplementedError


STRATEGIES: Registry[Strategy] = Registry("strategy", "--strategy")

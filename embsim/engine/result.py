"""SimulationResult: the typed outcome of one simulation. Formatting (tables, JSON) is
report/'s business."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..plan.timeline import EngineRun
from ..workload.memory import MemoryBreakdown
from .bucket_passes import bucket_pass_times
from .config import SimulationConfig
from .metrics import StepMetrics


def most_first(by_op: dict) -> list[tuple[str, float]]:
    """(op, time) pairs of `by_op` with a positive time, the largest first (ties by name):
    the order every output lists what the exposed time waited on."""
    return sorted(((op, t) for op, t in by_op.items() if t > 0), key=lambda kv: (-kv[1], kv[0]))


@dataclass(frozen=True)
class ClusterShape:
    """The cluster simulated: the node type's preset and how many of its GPUs."""

    preset: str
    nodes: int
    gpus_per_node: int
    # the file the preset name resolved to: shown in the text summary; the JSON records it
    # as report/provenance.py does (a packaged preset as topologies/NAME.yaml, so results
    # stay comparable across machines; any other file by its path and sha256)
    file: str = field(default="", compare=False)

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    @classmethod
    def of(cls, topo) -> "ClusterShape":
        return cls(topo.preset, topo.n_nodes, topo.gpus_per_node, topo.node.source)


@dataclass
class SimulationResult:
    config: SimulationConfig
    cluster: ClusterShape
    model: str
    metrics: StepMetrics
    samples_per_s: float
    tokens_per_s: float
    memory: MemoryBreakdown
    hbm_bytes: float
    compute_source: str
    events: int
    wall_s: float
    scaling_efficiency: float | None
    notes: tuple = ()
    run: EngineRun | None = None
    # the workload as simulated (flags or the model's/trace's defaults): batch, seq, dtype...
    workload: dict = field(default_factory=dict)
    # the strategy's and scheduler's options and where each came from (engine.options_used)
    options_used: Any = None
    # link kind -> what its capacity rests on that nobody measured (Strategy.link_caveats:
    # a parameter server's assumed summation rate), for outputs that name it a bottleneck
    link_caveats: dict = field(default_factory=dict)

    # what people ask first, read through from the config and the metrics
    @property
    def strategy(self) -> str:
        return self.config.strategy

    @property
    def scheduler(self) -> str:
        return self.config.scheduler

    @property
    def n_gpus(self) -> int:
        return self.cluster.gpus

    @property
    def step_time(self) -> float:
        return self.metrics.step_time

    @property
    def compute(self) -> float:
        return self.metrics.compute

    @property
    def exposed_comm(self) -> float:
        return self.metrics.exposed_comm

    @property
    def bucket_passes(self) -> tuple:
        """((engine.bucket_passes.BucketPass, s per step), ...): DDP's copies into and out
        of its flat buckets and its divides, the part of `compute` they are."""
        return bucket_pass_times(self.metrics.extra_by_tag)

    @property
    def compute_stretch(self) -> float:
        return self.metrics.compute_stretch

    @property
    def comm_bytes_per_gpu(self) -> dict:
        return self.metrics.comm_bytes_per_gpu

    @property
    def comm_time(self) -> dict:
        return self.metrics.comm_time

    @property
    def comm_around(self) -> dict:
        return self.metrics.comm_around

    @property
    def comm_count(self) -> dict:
        return self.metrics.comm_count

    @property
    def comm_wall(self) -> float:
        return self.metrics.comm_wall

    @property
    def exposed_by_op(self) -> dict:
        return self.metrics.exposed_by_op

    @property
    def link_utilisation(self) -> dict:
        return self.metrics.link_utilisation

    @property
    def net_bytes_per_node(self) -> float | None:
        """Bytes a node sends into the network a step (its NICs' uplinks; the downlinks carry
        as much in): what a network-bound ranking turns on, which bytes per GPU (the busbw
        convention, traffic inside a node included) can point the other way. None on one node."""
        if self.cluster.nodes < 2 or "nic" not in self.metrics.link_bytes:
            return None
        return self.metrics.link_bytes["nic"] / 2.0 / self.cluster.nodes

    @property
    def fits_in_hbm(self) -> bool:
        return self.memory.total <= self.hbm_bytes

    @property
    def fits_in_memory(self) -> bool:
        """Every limit checked holds: the GPU's HBM, and the host memory of a node holding
        the strategy's servers or host tables where the topology gives it (an unknown one
        is not checked: the output says so)."""
        host = self.memory.host
        return self.fits_in_hbm and (host is None or host.fits is not False)

    @property
    def busiest_link(self) -> tuple[str, float, float] | None:
        util = self.metrics.link_utilisation
        if not util:
            return None
        kind = max(util, key=lambda k: util[k][1])
        mean, peak = util[kind]
        return kind, mean, peak

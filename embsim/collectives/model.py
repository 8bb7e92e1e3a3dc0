"""CollectiveModel: what one collective costs on a topology, as a CollectivePlan.

Two times are kept apart on purpose:
  * model_time -- NCCL's own prediction (tuning.cc), which is what NCCL minimises to pick
    the algorithm and protocol;
  * time -- our simulated time on an idle network, from the kernel's pipeline for NCCL's
    pick (pipeline.py): NCCL's latency, a synchronisation per pipeline step, the chunks
    NCCL really uses, and the bandwidth of the channels/threads it really launches.
The plan's demand is the per-link byte pattern of the chosen algorithm, scaled so that
`latency + max(demand.bytes / capacity[demand.links]) == time` on an idle network.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from embsim.curves import interp_loglog
from embsim.errors import InputError
from embsim.nccl_names import parse_filter
from embsim.network import Demand

from . import collnet
from . import demand as dm
from . import legacy
from . import nccl_model as nm
from . import ofi_tuner
from . import pipeline
from .busbw import busbw_factor
from .collnet_demand import collnet_demand
from .multinode import kernel_view, nvls_node_bw, nvlstree_kernel_bw, tree_kernel_bw
from .channels import Graphs, search_graphs
from .constants import NcclConstants, constants_for, release_label, release_text
from .nccl_env import NcclEnv, apply_env
from .alltoall_demand import AlltoallPattern, NotRegular
from .p2p import alltoall_time, alltoallv_time, node_nic_share, p2p_time, sendrecv_time
from .servers import server_transfer
from .traffic import Traffic, node_remote_bytes, traffic_p2p_load
from .shape import CommShape, comm_shape

KERNEL_CONSTS = constants_for(None)

P2P_OPS = ("alltoall", "sendrecv")
# All-to-all route tables depend only on the topology's structure (node type, shape) and
# the communicator, not on the CollectiveModel: at 1024 GPUs they are ~130k routes and
# ~1 s to build, so compare/sweep/scale runs that rebuild the model share them.
_A2A_ROUTES: "OrderedDict[tuple, object]" = OrderedDict()
_A2A_ROUTES_MAX = 8
OPS = nm.NCCL_OPS + P2P_OPS


@dataclass(frozen=True, eq=False)
class CollectivePlan:
    op: str
    nbytes: int
    n_ranks: int
    algo: str
    proto: str
    time: float          # s, simulated, idle network
    latency: float       # s
    demand: Demand       # scaled: latency + bottleneck(demand) == time
    model_time: float    # s, NCCL's own cost-model prediction
    source: str = "model"  # "model" | "measured"
    # The demand is the pattern scaled to the modelled time, so its bytes are how long each
    # link is held, not what crosses it: times this factor, the bytes the pattern sends
    data_factor: float = 1.0


def _pcie_tree_capacity(topology, capacity: np.ndarray) -> np.ndarray | None:
    """The file's PCIe-tree capacities (inf on every other link) of a node with a PCIe
    tree: its GPU links, PCIe switch uplinks and socket links. Where a communicator's rings
    run over PCIe (a PCIe node; GPUs of a bridged or meshed node that NVLink does not join),
    GPU-to-GPU traffic has one path up and down that tree, and every byte a pattern sends
    over a link has to cross it at the link's rate, which neither NCCL's search (its own
    per-CPU constant) nor its kernels' per-GPU rate sees for a shared uplink or the socket
    link; None on an NVSwitch node. A bridged pair's NVLink is held to its file rate too:
    a pattern over such GPUs sends some peers' bytes over the bridge, which the PCIe
    kernels' rate does not price."""
    if topology.node.fabric.kind == "nvswitch":
        return None
    tree = np.isin(np.asarray(topology.link_kinds), ("cpu", "pcie", "nvlink"))
    if not tree.any():
        return None
    return np.where(tree, capacity, np.inf)


def _said(flag: str, value) -> str:
    """A filter as it was set: "--nccl-algo Tree", "NCCL_ALGO=Tree"."""
    return f"{flag} {value}" if flag.startswith("-") or "." in flag else f"{flag}={value}"


class CollectiveModel:
    def __init__(self, topology, algo: str | None = None, proto: str | None = None,
                 nccl_version: str | None = "2.30",
                 measured: Mapping[tuple[str, int], tuple[Sequence[float], Sequence[float]]] | None = None,
                 nccl_env: NcclEnv | None = None, threshold_choice: bool = False,
                 flags: tuple[str, str] = ("NCCL_ALGO", "NCCL_PROTO")):
        self.topology = topology
        # a 2.4 log: NCCL picked by a size threshold (legacy.py), not by its cost model
        self.threshold_choice = threshold_choice
        # the release's constants with the run's NCCL_BUFFSIZE & co (buffer/chunk sizes), over
        # the platform profile's (topology nics.nccl_env), which a run's own setting replaces
        nics = topology.node.nics
        self.platform_env = tuple((k, v) for k, v in nics.nccl_env
                                  if nccl_env is None or nccl_env.get(k) is None)
        env = NcclEnv(tuple(sorted(self.platform_env + (nccl_env.values if nccl_env else ()))))
        self.consts: NcclConstants = apply_env(constants_for(nccl_version), env)
        # the release as the run named it: "2.28.3" where a patch has its own tables (the
        # constants carry only the minor, "2.28"), for the outputs to say which was modelled
        # (a patch no tag carries named with the tagged release whose tables model it)
        given = release_text(str(nccl_version)) if nccl_version not in (None, "", "unknown") else ""
        self.release = release_label(given) if given.count(".") == 2 else self.consts.version
        # a net plugin's NCCL_PROTO (topology nics.nccl_proto) or a platform profile's
        # NCCL_ALGO (nics.nccl_algo) holds unless the run sets its own, as the plugin or
        # profile sets the variable only when it is unset (aws-ofi-nccl on p4d: simple)
        run_sets_algo = algo is not None and str(algo).strip() != ""
        self.plugin_algo = "" if run_sets_algo else nics.nccl_algo
        self.algos = (parse_filter(self.plugin_algo, "algo", "nics.nccl_algo") if self.plugin_algo
                      else parse_filter(algo, "algo"))
        run_sets_proto = proto is not None and str(proto).strip() != ""
        self.plugin_proto = "" if run_sets_proto else nics.nccl_proto
        self.protos = (parse_filter(self.plugin_proto, "proto", "nics.nccl_proto") if self.plugin_proto
                       else parse_filter(proto, "proto"))
        # the filters as the run set them, for a refusal to name ("--nccl-algo Tree")
        said = [(_said("nics.nccl_algo", self.plugin_algo) if self.plugin_algo
                 else _said(flags[0], algo)) if self.algos is not None else "",
                (_said("nics.nccl_proto", self.plugin_proto) if self.plugin_proto
                 else _said(flags[1], proto)) if self.protos is not None else ""]
        self.filter_said = " with ".join(x for x in said if x)
        self.measured = dict(measured or {})
        # (op, ranks) -> the largest size a measured curve was asked for beyond its last point
        self.beyond_measured: dict[tuple[str, int], int] = {}
        for key, (sizes, times) in self.measured.items():
            if len(sizes) != len(times) or len(sizes) < 1 or min(sizes) <= 0 or min(times) <= 0:
                raise InputError(f"measured curve {key}: needs matching positive sizes and times")
        self.capacity = np.asarray(topology.capacity, dtype=np.float64)
        # NCCL's cost model sees GPUs, NVLink, PCIe, CPU links and NICs and assumes the
        # switch fabric behind the NICs is non-blocking. Demands are scaled to the model on
        # those links only, so an oversubscribed spine that is tighter than the NICs makes
        # the collective slower than the model, as it would in reality.
        self._fabric = topology.link_kinds == "net"
        self._modelled_capacity = np.where(self._fabric, np.inf, self.capacity)
        # The PCIe tree of a PCIe node at the file's rates (GPU links, switch uplinks, the
        # socket link): NCCL's search charges its own per-CPU constant (pci_rings.nccl_cpu_bw)
        # and its kernels' rate is the per-GPU link, so neither sees a shared uplink or the
        # socket link; every byte the pattern sends across one still has to cross it.
        self._tree_capacity = _pcie_tree_capacity(topology, self.capacity)
        self._tree_per_byte: dict = {}     # (op, algo, ranks) -> s per byte on the tree
        self._plans: dict = {}
        self._shapes: dict = {}
        self._units: dict = {}
        self._pairs: dict = {}

    # ------------------------------------------------------------ communicator
    def shape(self, ranks: tuple[int, ...]) -> tuple[CommShape, Graphs]:
        hit = self._shapes.get(ranks)
        if hit is None:
            s = comm_shape(self.topology, ranks, self.consts)
            hit = self._shapes[ranks] = (s, search_graphs(s, self.consts))
        return hit

    def _pair(self, op, algo, proto, ranks, shape, graphs) -> tuple[float, float]:
        """NCCL's latency (µs) and the kernel's bandwidth (GB/s) of a pair; size-independent."""
        key = (op, algo, proto, ranks)
        hit = self._pairs.get(key)
        if hit is None:
            hit = self._pairs[key] = (
                # NCCL's latency with the hop the fabric really adds in place of the
                # plugin's reported (tuning) latency, which only steers NCCL's choice
                nm.latency(op, algo, proto, kernel_view(shape), graphs, self.consts),
                # what the hardware delivers: the newest table's protocol efficiencies
                # (2.18-2.20 charged LL a quarter of the link, 2.21+ the half its 8-of-16 B
                # lines carry); the version's own table only steers NCCL's choice
                # and the file's links where they differ from what NCCL's constants know
                self._kernel_bw(op, algo, proto, shape, graphs.for_kernel()))
        return hit

    @staticmethod
    def _kernel_bw(op, algo, proto, shape, graphs) -> float:
        return shape.host_staged_bw(CollectiveModel._link_bw(op, algo, proto, shape, graphs), op)

    @staticmethod
    def _link_bw(op, algo, proto, shape, graphs) -> float:
        if algo in nm.COLLNET:
            # what the kernel's NVLink and NIC stages move on the file's links (collnet.py)
            return collnet.kernel_bw(algo, shape, graphs)
        if algo == "NVLSTree" and op == "all_reduce":
            # its node stage already on the file's NVLink (multinode.nvlstree_stage_bw)
            return nvlstree_kernel_bw(shape, KERNEL_CONSTS)
        if algo == "NVLS" and op == "all_reduce" and shape.n_nodes == 1:
            return nvls_node_bw(shape, KERNEL_CONSTS) * shape.kernel_scale
        table = nm.bandwidth(op, algo, proto, shape, graphs, KERNEL_CONSTS) * shape.kernel_scale_for(algo)
        if algo == "Tree" and proto == "Simple" and op == "all_reduce":
            # the file's links, not NCCL's constants: no kernel_scale on top
            return tree_kernel_bw(shape, table)
        return table

    @property
    def view_note(self) -> str:
        """A line for the output when the topology file and NCCL's own view disagree."""
        from .shape import fabric_ratio
        node = self.topology.node
        from .pci_rings import socket_view_note
        r, note = fabric_ratio(node.fabric, int(node.gpu.arch))
        if not note or abs(r / node.fabric.nvlink_whatif_scale - 1.0) <= 1e-9:
            note = ""
        # a bridged or meshed node's rings over GPUs NVLink does not join cross its PCIe
        pcie = (fabric_ratio(node.fabric, int(node.gpu.arch), "pcie")[1]
                if node.fabric.kind in ("nvlink-mesh", "nvlink-bridge") else "")
        return "; ".join(n for n in (note, pcie, socket_view_note(node.fabric, self.consts.version)) if n)

    @property
    def notes(self) -> tuple[str, ...]:
        """Every line this model's outputs must carry about itself (the file's view against
        NCCL's, a net plugin's tuner, a known held-out shortfall), the empty ones left out."""
        return tuple(n for n in (self.topology.alias_note, self.view_note, self.plugin_proto_note,
                                 self.tuner_note, self.fidelity_note) if n)

    @property
    def plugin_proto_note(self) -> str:
        """A line for the output when the net plugin or the platform's NCCL profile, not the
        run, set NCCL_PROTO / NCCL_ALGO / buffer sizes."""
        said = ([f"NCCL_ALGO={self.plugin_algo}"] if self.plugin_algo else []) + \
               ([f"NCCL_PROTO={self.plugin_proto}"] if self.plugin_proto else []) + \
               [f"{k}={v}" for k, v in self.platform_env]
        if not said:
            return ""
        keys = [k for k, on in (("nccl_algo", self.plugin_algo), ("nccl_proto", self.plugin_proto),
                                ("nccl_env", self.platform_env)) if on]
        return f"{' '.join(said)}: the platform's setting ({', '.join('nics.' + k for k in keys)})"

    @property
    def fidelity_note(self) -> str:
        """A line for the output where held-out measurements put the model off both ways: GPUs
        on PCIe whose ring NCCL stages through host memory (SHM), because the driver allows no
        peer-to-peer or because a hop lies beyond NCCL's default P2P level (an Intel host's
        root complex; an 8-GPU AMD host from 2.23: pci_rings.p2p_level). Published runs on such
        boxes (2x RTX 2080 Ti, RTX 4090 pairs: AllReduce, AllGather, AlltoAll) take 1.2x to
        several times the model's time, and an 8x RTX 4090 EPYC box 0.8x; the mechanism is not
        established (collective_notes.md), so the output says so instead of a factor."""
        from .shape import node_transports
        fab = self.topology.node.fabric
        if fab.kind != "pcie" or "shm" not in node_transports(self.topology, self.consts):
            return ""
        why = "beyond NCCL's P2P level" if fab.pcie_p2p else "P2P off"
        return (f"host-staged ({why}): published host-staged AllReduce/AllGather/AlltoAll runs are off "
                f"the model both ways, 0.8x to several times its time (docs/validation.md)")

    @property
    def tuner_note(self) -> str:
        """A line for the output when a net plugin's tuner, not NCCL, picks the algorithm."""
        tuner = self.topology.node.nics.nccl_tuner
        if not ofi_tuner.loaded(tuner, self.consts.version) or self.topology.n_nodes <= 2:
            return ""
        return f"algo/proto on > 2 nodes: {ofi_tuner.described(tuner)}"

    def _alltoall_routes(self, ranks: tuple[int, ...], pairwise: bool = False):
        """The communicator's all-to-all structure (AlltoallPattern), or the pairwise
        route table (AlltoallRoutes) for a dense matrix or an irregular communicator."""
        t = self.topology
        key = (t.node, t.n_nodes, t.gpus_per_node, ranks, pairwise)
        hit = _A2A_ROUTES.get(key)
        if hit is None:
            if pairwise:
                hit = dm.AlltoallRoutes(t, ranks)
            else:
                try:
                    hit = AlltoallPattern(t, ranks)
                except NotRegular:
                    return self._alltoall_routes(ranks, pairwise=True)
            _A2A_ROUTES[key] = hit
            if len(_A2A_ROUTES) > _A2A_ROUTES_MAX:
                _A2A_ROUTES.popitem(last=False)
        else:
            _A2A_ROUTES.move_to_end(key)
        return hit

    def _unit_demand(self, op: str, algo: str, ranks: tuple[int, ...]) -> Demand:
        """Per-link bytes for 1 byte of nccl-tests size (patterns are linear in size)."""
        key = (op, algo, ranks)
        hit = self._units.get(key)
        if hit is None:
            n = len(ranks)
            if algo in ("Ring", "PAT"):
                # a ring rank sends its successor busbw-factor bytes per byte of size:
                # nccl-tests defines busbw by exactly those bytes (PERFORMANCE.md)
                hit = dm.ring_demand(self.topology, ranks, busbw_factor(op, n))
            elif algo == "Tree":
                hit = dm.tree_demand(self.topology, ranks, 1.0)
            elif algo in ("NVLS", "NVLSTree"):
                hit = dm.nvls_demand(self.topology, ranks, 1.0, op)
            elif algo in nm.COLLNET:
                shape, graphs = self.shape(ranks)
                hit = collnet_demand(self.topology, ranks, 1.0, algo, collnet.net_nics(algo, shape, graphs))
            elif op == "alltoall":
                routes = self._alltoall_routes(ranks)
                hit = (routes.uniform(1.0 / n) if isinstance(routes, AlltoallPattern)
                       else routes.demand(dm.uniform_alltoall_matrix(n, 1.0)))
            elif op == "sendrecv":
                order = sorted(ranks)
                pairs = [(order[i], order[(i + 1) % n]) for i in range(n)]
                hit = dm.RouteSet.of(self.topology, pairs).demand(np.ones(n))
            else:
                raise ValueError(f"no demand pattern for {op}/{algo}")
            self._units[key] = hit
        return hit

    def _tree_time(self, unit: Demand, scale: float, shape: CommShape) -> float:
        """Seconds the busiest link of the node's PCIe tree needs for `scale` x `unit`'s bytes
        at the file's rates (0: a communicator whose rings are not on PCIe)."""
        if (self._tree_capacity is None or shape.intra != "pcie" or unit.is_empty
                or scale <= 0):
            return 0.0
        return scale * unit.bottleneck_time(self._tree_capacity)

    def _scale(self, unit: Demand, transfer_s: float) -> float:
        """The factor that makes `unit`'s bottleneck link busy for `transfer_s` (0: none)."""
        if transfer_s <= 0 or unit.is_empty:
            return 0.0
        basis = unit.bottleneck_time(self._modelled_capacity)
        if basis <= 0:          # a demand on fabric links only: scale to all links
            basis = unit.bottleneck_time(self.capacity)
        return transfer_s / basis

    def _scaled(self, unit: Demand, transfer_s: float) -> tuple[Demand, float]:
        """(`unit` scaled to hold its bottleneck link `transfer_s`, the data each of its
        bytes stands for per byte of `unit`: 1 / scale; 0 where nothing is scaled)."""
        k = self._scale(unit, transfer_s)
        return (unit.scaled(k), 1.0 / k) if k > 0 else (Demand.empty(), 0.0)

    # ------------------------------------------------------------------ plans
    def plan(self, op: str, nbytes: int, ranks: Sequence[int]) -> CollectivePlan:
        ranks = tuple(ranks)
        key = (op, int(nbytes), ranks)
        hit = self._plans.get(key)
        if hit is None:
            hit = self._plans[key] = self._make_plan(op, int(nbytes), ranks)
        return hit

    def _make_plan(self, op: str, nbytes: int, ranks: tuple[int, ...]) -> CollectivePlan:
        if op not in OPS:
            raise InputError(f"op {op!r}: known ops are {', '.join(OPS)}")
        if nbytes < 0:
            raise InputError(f"{op}: negative size {nbytes}")
        n = len(ranks)
        if n <= 1 or nbytes == 0:
            return CollectivePlan(op, nbytes, n, "none", "none", 0.0, 0.0, Demand.empty(), 0.0)
        shape, graphs = self.shape(ranks)
        if op in P2P_OPS:
            fn = alltoall_time if op == "alltoall" else sendrecv_time
            proto = None if self.protos is None else ("LL" if self.protos == {"LL"} else "Simple")
            t = fn(shape, self.consts, nbytes, graphs.comm_channels, proto)
            algo, proto, lat_us, model_us, time_us = "P2P", t.proto, t.latency, t.time, t.time
        else:
            choice = self._choice(op, nbytes, shape, graphs)
            algo, proto, model_us = choice.algo, choice.proto, choice.time
            # NCCL picks on its own model; the time is the kernel's pipeline for that pick
            lat0, bw0 = self._pair(op, algo, proto, ranks, shape, graphs)
            if algo in nm.COLLNET:
                t = collnet.collnet_time(algo, nbytes, shape, graphs, self.consts, lat0, bw0)
            else:
                t = pipeline.collective_time(op, algo, proto, nbytes, shape, graphs, self.consts, lat0, bw0)
            lat_us, time_us = t.latency, t.time
        source = "model"
        if (op, n) in self.measured:
            sizes, times = self.measured[(op, n)]
            time_us = interp_loglog(sizes, times, nbytes) * 1e6
            if nbytes > max(sizes):     # at the last point's bandwidth: said by the run
                self.beyond_measured[(op, n)] = max(self.beyond_measured.get((op, n), 0), nbytes)
            lat_us = min(lat_us, time_us)
            source = "measured"
        latency, time = lat_us * 1e-6, time_us * 1e-6
        unit = self._unit_demand(op, algo, ranks)
        if source == "model" and self._tree_capacity is not None:
            # the PCIe tree's links: what the pattern sends across each, at its rate
            per_byte = self._tree_per_byte.get((op, algo, ranks))
            if per_byte is None:
                per_byte = self._tree_per_byte[(op, algo, ranks)] = self._tree_time(unit, 1.0, shape)
            time = max(time, latency + per_byte * nbytes)
        dem, per_unit = self._scaled(unit, time - latency)
        if dem.is_empty:
            latency = time
        else:
            time = max(time, latency + dem.bottleneck_time(self.capacity))
        # the unit pattern is per byte of size: nbytes of it is what the links carry
        return CollectivePlan(op, nbytes, n, algo, proto, time, latency, dem, model_us * 1e-6, source,
                              data_factor=nbytes * per_unit or 1.0)

    def _choice(self, op: str, nbytes: int, shape: CommShape, graphs: Graphs) -> nm.AlgoTime:
        """NCCL's (algo, proto): its cost model's argmin, or 2.4's size threshold where the
        run asks for it and the filters allow that pick (model_time: the pick's model time)."""
        if self.threshold_choice:
            algo, proto = legacy.choose(op, nbytes, shape.arch, shape.n_nodes, shape.n_ranks,
                                        graphs.comm_channels, shape.intra != "pcie")
            allowed = ((self.algos is None or algo in self.algos)
                       and (self.protos is None or proto in self.protos))
            picked = nm.algo_time(op, algo, proto, nbytes, shape, graphs, self.consts) if allowed else None
            if picked is not None:
                return picked
        if ofi_tuner.loaded(shape.nccl_tuner, self.consts.version):
            # the net plugin's tuner zeroes one pair's cost where NCCL has one (ofi_tuner.py);
            # NCCL's candidates are asked only for a pair a region holds (most ops: none)
            def available(algo: str, proto: str) -> bool:
                return ((algo, proto) in nm.candidates(op, shape, graphs, self.consts, self.algos, self.protos,
                                                      self.filter_said)
                        and nm.bandwidth(op, algo, proto, shape, graphs, self.consts) > 0)
            forced = ofi_tuner.pick(shape.nccl_tuner, op, nbytes, shape.n_ranks, shape.n_nodes, available)
            if forced is not None:
                return nm.algo_time(op, *forced, nbytes, shape, graphs, self.consts)
        return nm.select(op, nbytes, shape, graphs, self.consts, self.algos, self.protos,
                         self.filter_said)

    def plan_groups(self, op: str, nbytes: int, groups: Sequence[Sequence[int]]) -> CollectivePlan:
        """The same collective on several disjoint communicators at once (tensor
        parallelism's TP groups, or its data-parallel groups): each group's plan, their
        link demands added (where the groups share links, e.g. a node's NICs or PCIe
        switches, the network shares them), the slowest group's latency and idle time."""
        groups = tuple(tuple(g) for g in groups)
        if len(groups) == 1:
            return self.plan(op, nbytes, groups[0])
        key = ("groups", op, int(nbytes), groups)
        hit = self._plans.get(key)
        if hit is None:
            plans = [self.plan(op, nbytes, g) for g in groups]
            first = max(plans, key=lambda p: p.time)
            demand = Demand.sum(p.demand for p in plans)
            held = float(demand.bytes.sum())
            data = sum(float(p.demand.bytes.sum()) * p.data_factor for p in plans)
            hit = self._plans[key] = CollectivePlan(
                op, int(nbytes), len(groups[0]), first.algo, first.proto,
                max(p.time for p in plans), max(p.latency for p in plans),
                demand, first.model_time, first.source,
                data_factor=data / held if held > 0 else 1.0)   # the groups' plans alike
        return hit

    def plan_servers(self, op: str, matrix, ranks: Sequence[int]) -> CollectivePlan:
        """A parameter-server push or pull (collectives.servers): not NCCL, no tuning."""
        structured = isinstance(matrix, Traffic)
        key = (op, tuple(ranks)) + (matrix.key() if structured else (np.asarray(matrix, dtype=np.float64).tobytes(),))
        hit = self._plans.get(key)
        if hit is None:
            latency, time, demand = server_transfer(self.topology, self.capacity, op, matrix, ranks)
            total = matrix.total() if structured else np.sum(matrix)
            hit = self._plans[key] = CollectivePlan(op, int(total), len(ranks), "PS", "net",
                                                    time, latency, demand, time)
        return hit

    def plan_alltoallv(self, matrix, ranks: Sequence[int]) -> CollectivePlan:
        """All-to-all-v: matrix[i, j] bytes from ranks[i] to ranks[j] (any rank order); a
        Traffic (outer product) at any scale, or a dense n x n array."""
        ranks = tuple(ranks)
        n = len(ranks)
        if isinstance(matrix, Traffic):
            if matrix.shape != (n, n):
                raise InputError(f"alltoallv: traffic for {matrix.n} ranks, communicator has {n}")
            key = ("alltoallv", ranks) + matrix.key()
        else:
            m = np.asarray(matrix, dtype=np.float64)
            if m.shape != (n, n) or not np.all(np.isfinite(m)) or (m.size and m.min() < 0):
                raise InputError(f"alltoallv: matrix must be {n}x{n} finite bytes >= 0, got shape {m.shape}")
            key = ("alltoallv", ranks, m.tobytes())
        hit = self._plans.get(key)
        if hit is not None:
            return hit
        total = int(matrix.total()) if isinstance(matrix, Traffic) else int(m.sum())
        if n <= 1 or total == 0:
            plan = CollectivePlan("alltoallv", total, n, "none", "none", 0.0, 0.0, Demand.empty(), 0.0)
        else:
            shape, graphs = self.shape(ranks)
            # Reorder into the node-major order the route tables use.
            order = np.argsort(np.asarray(ranks))
            sorted_ranks = np.asarray(ranks)[order]
            node_of = np.array([self.topology.node_of(int(r)) for r in sorted_ranks])
            if isinstance(matrix, Traffic):
                tr = matrix.permuted(order)
                load = traffic_p2p_load(tr, node_of, shape.ppn)
                t = p2p_time(shape, self.consts, *load, graphs.comm_channels,
                             nic_share=node_nic_share(shape, load[1], node_remote_bytes(tr, node_of)))
                routes = self._alltoall_routes(tuple(sorted(ranks)))
                if isinstance(routes, AlltoallPattern):
                    unit = routes.demand(tr)
                elif routes.g * routes.n_nodes != n:
                    raise InputError("alltoallv: every node of the communicator needs the same GPU count")
                else:
                    unit = routes.demand(tr.dense())
            else:
                ms = m[np.ix_(order, order)]
                t = alltoallv_time(shape, self.consts, ms, node_of, graphs.comm_channels)
                routes = self._alltoall_routes(tuple(sorted(ranks)), pairwise=True)
                if routes.g * routes.n_nodes != n:
                    raise InputError("alltoallv: every node of the communicator needs the same GPU count")
                unit = routes.demand(ms)
            t_us = max(t.time, t.latency + self._tree_time(unit, 1.0, shape) * 1e6)
            dem, per_unit = self._scaled(unit, (t_us - t.latency) * 1e-6)
            lat = t.latency * 1e-6 if not dem.is_empty else t_us * 1e-6
            time = t_us * 1e-6 if dem.is_empty else max(t_us * 1e-6, lat + dem.bottleneck_time(self.capacity))
            # this unit holds the matrix's own bytes
            plan = CollectivePlan("alltoallv", total, n, "P2P", t.proto, time, lat, dem, t.time * 1e-6,
                                  data_factor=per_unit or 1.0)
        self._plans[key] = plan
        return plan

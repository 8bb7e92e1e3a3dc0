"""The node-type dialect as data: what one YAML file in topologies/ describes.

Units here are the ones people read in the YAML (GB/s per direction, µs, Gb/s);
build.py converts to bytes/s and seconds when it makes links.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from embsim.errors import InputError


class TopologyError(InputError):
    """A bad topology file, preset name or --topology value."""


FABRIC_KINDS = ("nvswitch", "nvlink-mesh", "nvlink-bridge", "pcie", "host")
NVLINK_FABRICS = ("nvswitch", "nvlink-mesh", "nvlink-bridge")
CPU_VENDORS = ("intel", "amd", "arm")
# Intel CPU generations as NCCL's topology classifies them (graph/topo.cc, by CPUID family 6
# model: >= 0xCF Emerald Rapids, >= 0x8F Sapphire Rapids, >= 0x55 Skylake, else Broadwell;
# v2.26.2-1 topo.cc 519-523). Cascade Lake, Cooper Lake and Ice Lake Xeons are "skylake" here,
# Granite Rapids (model 0xAD) "sapphire-rapids": the class NCCL puts them in, not marketing.
# AMD and ARM hosts need no model: NCCL keys their socket link on the vendor alone.
CPU_MODELS = ("broadwell", "skylake", "sapphire-rapids", "emerald-rapids")
NETWORK_KINDS = ("rail-fat-tree", "fat-tree")
# Net-plugin tuners whose choice tables are modelled (embsim.collectives.ofi_tuner)
NCCL_TUNERS = ("aws-ofi-nccl-p5",)

# Upper bounds of what a node-type file may say, each well beyond any machine built or
# announced (a B200 is 2.25 PFLOPS bf16 dense, 8 TB/s HBM; NVLink 5 is 900 GB/s per
# direction; an 800 Gb/s NIC; a 64-port switch layer). A larger value is a typo in units
# (GB vs bytes) and would only make the simulator run for ever or exhaust memory.
LIMITS = {
    "arch": 1000,                   # compute capability x10
    "count": 128,                   # GPUs per node
    "bf16_tflops": 1e5, "fp32_tflops": 1e5,
    "hbm_gb": 1e5, "hbm_gbps": 1e6,  # a CPU device's hbm_* is host RAM
    "nvswitches": 64, "nvlink_links_per_gpu": 64, "nvlink_gbps": 1e5,
    "pcie_lanes": 64, "pcie_gbps": 1e4, "pcie_switches": 64,
    "cpu_sockets": 16, "cpu_link_gbps": 1e4, "nccl_cpu_link_gbps": 1e4, "host_gbps": 1e5,
    "latency_us": 1e6, "nvlink_latency_us": 1e6, "pcie_latency_us": 1e6,
    "cpu_latency_us": 1e6, "host_latency_us": 1e6,
    "c2c_gbps": 1e4, "c2c_latency_us": 1e6,
    "interference": 100.0,          # compute 101x slower while a collective runs
    "nics": 128, "gbit": 1e5,           # a GB200 NVL72 rack as one node has 72
    "oversubscription": 1000.0,
    "nodes": 16384,                 # nodes in a cluster (and per leaf switch)
    "spines": 4096, "radix": 1024,
    "sms": 1000, "gemm_fraction": 1.0, "hbm_fraction": 1.0,   # fractions of a peak
    "l2_bytes_per_clk": 1e6, "clock_mhz": 1e5, "l2_gbps": 1e6,
    "gpus": 131072,                 # GPUs in a cluster
    # host (CPU) memory of a node or server machine, GiB: a GB200 NVL72 rack's 36 Graces hold
    # 17 TB; 1e6 GiB is a petabyte
    "host_memory_gb": 1e6,
}


@dataclass(frozen=True)
class GpuSpec:
    model: str                 # e.g. "H100-SXM5-80GB"; "cpu" for a CPU-only device
    arch: int                  # compute capability x10 (80, 86, 90, 100); 0 for a CPU device
    count: int                 # GPUs per node
    bf16_tflops: float         # dense peak
    hbm_gb: float              # device memory in GiB, as vendors' "80GB" is (host RAM for a CPU device)
    hbm_gbps: float            # device memory bandwidth, GB/s
    fp32_tflops: float | None = None  # non-tensor FP32 peak (PyTorch fp32 matmuls, TF32 off); None: unknown
    # Compute-model properties (embsim.workload.gpu_compute); None/empty: not published
    # for this GPU, and every output says so.
    tensor_tflops: tuple[tuple[str, float], ...] = ()  # dense tensor-core peak per dtype (FP32 accumulate)
    sms: int | None = None             # streaming multiprocessors (GEMM tile waves)
    gemm_fraction: float | None = None  # measured large-GEMM TFLOPS / peak (dtypes without their own)
    gemm_fractions: tuple[tuple[str, float], ...] = ()  # per dtype, where a source gives it
    hbm_fraction: float | None = None   # measured streaming bandwidth / hbm_gbps
    l2_bytes_per_clk: float | None = None  # L2 -> SM bandwidth (GEMM tile operand feed)
    clock_mhz: float | None = None      # boost clock the peaks are quoted at
    l2_gbps: float | None = None        # measured L2 read bandwidth, GB/s (where no B/clk figure is published)
    # The GPU whose measured fractions (gemm_fraction, gemm_fractions, hbm_fraction) the file
    # reuses because its own GPU has none ("dgx-b200's B200" in the B300 preset): every
    # output's "no data" list names it, as it names a default. None: they are this GPU's own.
    fractions_from: str | None = None


@dataclass(frozen=True)
class FabricSpec:
    kind: str                                   # one of FABRIC_KINDS
    # NVLink (nvswitch / nvlink-mesh / nvlink-bridge)
    nvswitches: int | None = None               # NVSwitch chips (modelled as one logical switch)
    nvlink_links_per_gpu: int | None = None
    nvlink_gbps: float | None = None            # all of a GPU's NVLinks, per direction, GB/s
    nvlink_latency_us: float | None = None      # per hop
    nvlink_pairs: tuple[tuple[int, int, int], ...] = ()   # mesh/bridge: (gpu a, gpu b, links)
    # PCIe tree (every GPU fabric; optional for mesh/bridge)
    pcie_gen: int | None = None
    pcie_lanes: int | None = None
    pcie_gbps: float | None = None              # one x`pcie_lanes` link, per direction, GB/s
    pcie_latency_us: float | None = None        # per hop
    pcie_switches: int | None = None            # 0: GPUs on CPU root ports
    cpu_sockets: int | None = None
    cpu_vendor: str | None = None
    # The physical socket-to-socket link (QPI/UPI/xGMI/C2C): all links between two sockets
    # together, per direction, GB/s. Every flow that crosses sockets shares it (host-staged
    # SHM traffic, ps pushes/pulls, copies into host memory). NOT NCCL's search constant:
    # that is nccl_cpu_link_gbps, or derived from cpu_vendor/cpu_model (pci_rings.nccl_cpu_bw).
    cpu_link_gbps: float | None = None
    cpu_model: str | None = None                # Intel generation, one of CPU_MODELS
    nccl_cpu_link_gbps: float | None = None     # NCCL's view stated outright (overrides the derivation)
    cpu_latency_us: float | None = None
    # NVLink-C2C between each GPU and its CPU (Grace Hopper: the GPU has no PCIe link to the
    # host; NICs and other devices hang off the CPU's PCIe): per direction, GB/s. Set, every
    # GPU on a CPU root port (pcie_switches 0) reaches its socket over a "c2c" link instead
    # of a PCIe one; NICs keep theirs. NCCL reads the link from NVML (topo.cc ncclTopoAddC2c:
    # LINK_C2C at links x per-link rate) and calls a GPU -> CPU -> NIC path over it P2C
    # (paths.cc mergePathType), close enough for GPUDirect RDMA by default (NET_GDR_C2C=1).
    c2c_gbps: float | None = None
    c2c_latency_us: float | None = None
    # PCIe peer-to-peer between GPUs (fabric kind pcie): False where the driver refuses it
    # and NCCL's SHM transport stages every byte through host memory
    pcie_p2p: bool = True
    # host (CPU-only devices sharing one memory system)
    host_gbps: float | None = None
    host_latency_us: float | None = None
    # Compute and communication sharing the machine (the engine's `interference` f and
    # `comm_interference` g: compute runs 1/(1+f) as fast while a collective is in flight,
    # a collective 1/(1+g) as fast while compute runs): measured by `embsim calibrate` (a
    # layer and an all_reduce timed alone and together), never a preset's guess; None:
    # not measured (0 unless --interference / --comm-interference).
    interference: float | None = None
    comm_interference: float | None = None
    # What-if NVLink bandwidth over the file's (Topology.with_overrides): NCCL's view of
    # the links scales with it, since NCCL would detect the faster or slower links.
    nvlink_whatif_scale: float = 1.0

    @property
    def has_nvlink(self) -> bool:
        return self.kind in NVLINK_FABRICS

    @property
    def has_pcie(self) -> bool:
        return self.pcie_gbps is not None


@dataclass(frozen=True)
class NicSpec:
    count: int                                  # NICs per node on the GPU fabric (0: single node only)
    gbit: float = 0.0                           # line rate per NIC, Gb/s
    latency_us: float = 0.0                     # adapter latency (half at each end of a hop)
    gpus: tuple[tuple[int, ...], ...] = ()      # gpus[k] = local GPUs NIC k serves
    # The latency the NCCL net plugin reports (ncclNetProperties.latency -> the graphs'
    # latencyInter, which NCCL's tuner adds per inter-node hop): 0 for NCCL's own IB/socket
    # transports ("Not set"); a plugin may report a tuning value (aws-ofi-nccl: 75 µs on p5).
    nccl_latency_us: float = 0.0
    # NICs the net plugin presents to NCCL as one device (aws-ofi-nccl's RDMA protocol groups
    # the EFA NICs next to a GPU into one multi-rail device at their summed speed): NCCL's
    # graph search sees count / nccl_group NICs of gbit x nccl_group.
    nccl_group: int = 1
    # Consecutive GPUs that reach each NIC at NCCL's closest GPU-NIC path type (GB200: the
    # two B200s of one Grace superchip, whose NICs hang off that Grace's PCIe, P2C over
    # NVLink-C2C). NCCL's tree search needs a chain's second GPU on that path, which
    # decides the chain's direction (collectives.tree_chain). 1: each NIC's own GPU only.
    nccl_local_gpus: int = 1
    # A tuner the net plugin carries that overrides NCCL's algorithm/protocol choice
    # (collectives.ofi_tuner: "aws-ofi-nccl-p5", AWS's region tables for p5/p5e); "": none.
    nccl_tuner: str = ""
    # NCCL_PROTO the net plugin sets when the user has not (aws-ofi-nccl: "simple" where the
    # EFA device has no 128-byte in-order delivery, p4d's EFA v1), NCCL_PROTO syntax; "": none.
    # It holds on every shape: the plugin sets it at NCCL's init, one node or many.
    nccl_proto: str = ""
    # NCCL_ALGO the platform's NCCL profile sets on every run unless the run sets its own
    # (Google's TCPXO nccl-env-profile.sh on A3 Mega: Ring,Tree), NCCL_ALGO syntax; "": none.
    nccl_algo: str = ""
    # The profile's buffer and chunk sizes (NCCL_BUFFSIZE, NCCL_P2P_*_CHUNKSIZE: the names
    # collectives.nccl_env models), bytes; a run's own setting of a name replaces it.
    nccl_env: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class NetworkSpec:
    kind: str = "rail-fat-tree"                 # one of NETWORK_KINDS
    oversubscription: float = 1.0               # leaf downlink / uplink bandwidth
    switch_latency_us: float = 0.0              # one switch traversal
    nodes_per_leaf: int | None = None           # None: one leaf (per rail) holds every node
    spines: int = 1                             # 1: one logical spine = ideal ECMP over the spine layer
    # Ports per switch. None: the spine layer takes any number of leaves (two tiers at any
    # size). Given: a spine switch reaches at most `radix` leaves, so a cluster with more
    # leaves gets a third (core) tier over pods of radix/2 leaves, as a fat tree does.
    radix: int | None = None
    spine_oversubscription: float = 1.0         # spine downlink / core uplink (third tier only)
    # In-network reduction (InfiniBand SHARP) that NCCL's CollNet plugin can use: only then
    # does NCCL run NVLS across nodes (tuning.cc disables NVLS on nNodes > 1 without it).
    sharp: bool = False


@dataclass(frozen=True)
class ServerSpec:
    """Parameter-server machines next to the GPU nodes (BytePS / Parallax): CPU nodes
    with their own NICs on the same network, summing pushed gradients on the CPU.
    Absent from a file: a `ps` run with dedicated servers uses ServerSpec's defaults
    (as many server nodes as GPU nodes, one NIC at the GPU nodes' line rate)."""

    nodes: int | None = None        # None: as many as GPU nodes (BytePS's advice)
    nics: int = 1                   # NICs per server node
    nic_gbit: float | None = None   # None: the GPU nodes' NIC line rate
    latency_us: float | None = None  # NIC latency; None: the GPU nodes'
    # What one server sums and applies per second, in bytes of pushed gradient. [ASSUMPTION]
    # 20 GB/s: a memory-bound sum + sparse optimizer step on one CPU socket's DDR4
    # (~100 GB/s peak) reading the gradient, the row and its state and writing both back.
    sum_gbps: float = 20.0
    # whether a file or --option gave sum_gbps; False: the assumed 20 GB/s above, which the
    # outputs of a run that sums on servers say (strategies.ps)
    sum_gbps_given: bool = field(default=False, compare=False)
    # host memory of one server machine, GiB (as host_memory_gb); None: not given, and the
    # servers' shards are not checked against anything
    host_memory_gb: float | None = None


@dataclass(frozen=True)
class NodeType:
    name: str
    description: str
    gpu: GpuSpec
    fabric: FabricSpec
    nics: NicSpec
    network: NetworkSpec
    source: str = ""                            # file it came from
    servers: ServerSpec | None = None           # `parameter_servers:` (dedicated PS nodes)
    # Host (CPU) memory of one node, GiB as the vendor's DIMM total is ("2 TB": 32 x 64 GB
    # DIMMs = 2048 GiB): what holds parameter servers colocated on the node, or tables kept
    # in host memory. None: the file gives none, and nothing is checked against it.
    host_memory_gb: float | None = None
    # key paths ("fabric.cpu_link_gbps") whose figure the file's own comment marks [UNKNOWN]
    # (a stand-in, not a published or measured number): outputs that lean on one say so
    unknown: tuple[str, ...] = ()

    def nic_of_gpu(self, local: int) -> int | None:
        """First NIC that serves this GPU (NCCL's closest NIC); None without NICs."""
        for k, gpus in enumerate(self.nics.gpus):
            if local in gpus:
                return k
        return None

"""Read one node-type YAML file into a NodeType, rejecting anything unexpected.

Every error names the file, the key path and the line (via embsim.yamlio) and is a
TopologyError, so the CLI prints one line and exits 2.
"""

from __future__ import annotations

from pathlib import Path

from embsim.errors import InputError
from embsim.nccl_names import parse_env_values, parse_filter
from dataclasses import replace

from embsim.yamlio import YamlDoc, check_mapping, check_name, get, parse_yaml, read_text

from .build import disconnected_pair, node_template
from .spec import (CPU_MODELS, CPU_VENDORS, FABRIC_KINDS, LIMITS, NCCL_TUNERS, NETWORK_KINDS, FabricSpec,
                   GpuSpec, NetworkSpec, NicSpec, NodeType, ServerSpec, TopologyError)

_NVLINK_KEYS = ["nvlink_links_per_gpu", "nvlink_gbps", "nvlink_latency_us"]
_PCIE_KEYS = ["pcie_gen", "pcie_lanes", "pcie_gbps", "pcie_latency_us", "pcie_switches",
              "cpu_sockets", "cpu_vendor"]
_SOCKET_LINK_KEYS = ["cpu_link_gbps", "cpu_latency_us"]
# What NCCL's graph search believes the socket link is (optional): the Intel generation it
# derives its constant from, or the constant itself (docs/architecture.md, "socket link")
_SOCKET_VIEW_KEYS = ["cpu_model", "nccl_cpu_link_gbps"]
# PCIe peer-to-peer between the GPUs (optional, default true): false where the driver
# refuses it (GeForce cards) and NCCL stages every transfer through host memory (SHM)
_P2P_KEYS = ["pcie_p2p"]
_HOST_KEYS = ["host_gbps", "host_latency_us"]
# NVLink-C2C from each GPU to its CPU (optional, both or neither; GPUs on CPU root ports)
_C2C_KEYS = ["c2c_gbps", "c2c_latency_us"]


TRACE_KIND = "embsim-trace"      # trace/io.py's; a trace may embed its machine
EMBEDDED_KEY = "host_topology"


def load_node_type(path: str | Path) -> NodeType:
    """Parse a topology file from disk, or the machine embedded in a calibration trace."""
    try:
        text = read_text(path)
        doc = parse_yaml(text, str(path))
        if isinstance(doc.data, dict) and doc.data.get("kind") == TRACE_KIND:
            if not isinstance(doc.data.get(EMBEDDED_KEY), dict):
                named = doc.data.get("topology")
                named = f" ({named})" if isinstance(named, str) and named.strip() else ""
                raise TopologyError(f"{path}: a trace without an embedded topology "
                                    f"({EMBEDDED_KEY}); give the topology it names{named} instead")
            doc = doc.sub(EMBEDDED_KEY)
        return with_unknown_marks(node_type_from_doc(doc), doc, text)
    except TopologyError:
        raise
    except InputError as exc:  # yamlio raises the base class; keep one error type
        raise TopologyError(str(exc)) from None


def parse_node_type(text: str, source: str = "<string>") -> NodeType:
    """Parse topology YAML text (tests, generated files)."""
    try:
        doc = parse_yaml(text, source)
        return with_unknown_marks(node_type_from_doc(doc), doc, text)
    except TopologyError:
        raise
    except InputError as exc:
        raise TopologyError(str(exc)) from None


# How a topology file marks a figure nobody published or measured (a stand-in), in the
# comment on the key's own line, as the packaged presets do: "cpu_link_gbps: 6  # [UNKNOWN] ..."
UNKNOWN_MARK = "[UNKNOWN]"


def with_unknown_marks(node: NodeType, doc: YamlDoc, text: str) -> NodeType:
    """`node` with NodeType.unknown: the key paths whose line's comment carries UNKNOWN_MARK
    (the file's own word that the figure is a stand-in), so an output that leans on one of
    them can say so. The text after the line's first '#' is the comment (no key embsim reads
    holds a '#' in its value)."""
    lines = text.splitlines()
    marked = []
    for path, line in doc.lines.items():
        if path and line and line <= len(lines):
            _, hash_, comment = lines[line - 1].partition("#")
            if hash_ and UNKNOWN_MARK in comment:
                marked.append(".".join(str(p) for p in path))
    return replace(node, unknown=tuple(sorted(marked))) if marked else node


def node_type_from_doc(doc: YamlDoc) -> NodeType:
    top = check_mapping(doc, (), doc.data, required=["name", "gpu", "fabric", "nics"],
                        optional=["description", "network", "parameter_servers", "host_memory_gb"])
    name = _text(doc, (), top, "name")
    description = get(doc, (), top, "description", str, default="")
    gpu = _gpu(doc, top["gpu"])
    fabric = _fabric(doc, top["fabric"], gpu)
    nics = _nics(doc, top["nics"], gpu, fabric)
    if "network" in top:
        network = _network(doc, top["network"])
    elif nics.count > 0:
        raise doc.error((), "missing required key 'network' (the node has NICs)")
    else:
        network = NetworkSpec()
    node = NodeType(name=name, description=description, gpu=gpu, fabric=fabric, nics=nics,
                    network=network, source=doc.source,
                    servers=_servers(doc, top["parameter_servers"]) if "parameter_servers" in top else None,
                    # optional: a node's host (CPU) memory, GiB (spec.NodeType.host_memory_gb)
                    host_memory_gb=get(doc, (), top, "host_memory_gb", float, default=None, positive=True,
                                       hi=LIMITS["host_memory_gb"]))
    # A full node of this type must be one connected graph (e.g. NVLink pairs without PCIe).
    broken = disconnected_pair(node_template(node, gpu.count))
    if broken:
        key = ("fabric", "nvlink_pairs") if fabric.nvlink_pairs else ("fabric",)
        raise doc.error(key, f"graph is disconnected: {broken[0]} cannot reach {broken[1]}")
    return node


def _text(doc: YamlDoc, path: tuple, m, key: str) -> str:
    """A required name: a string with something in it (outputs print it as the source)."""
    return check_name(doc, path + (key,), get(doc, path, m, key, str))


def _gpu(doc: YamlDoc, m) -> GpuSpec:
    p = ("gpu",)
    keys = ["model", "arch", "count", "bf16_tflops", "hbm_gb", "hbm_gbps"]
    check_mapping(doc, p, m, required=keys, optional=["fp32_tflops", *_COMPUTE_KEYS, "tensor_tflops",
                                                             "gemm_fractions", "fractions_from"])
    arch = get(doc, p, m, "arch", int, hi=LIMITS["arch"])
    if arch < 0:
        raise doc.error(p + ("arch",), f"must be >= 0 (0 means a CPU device), got {arch}")

    def num(key, kind=float, **kw):
        return get(doc, p, m, key, kind, positive=True, hi=LIMITS[key], **kw)

    tensor = _tensor_tflops(doc, m.get("tensor_tflops"))
    borrowed = _text(doc, p, m, "fractions_from") if "fractions_from" in m else None
    if borrowed and not any(k in m for k in _MEASURED_KEYS):
        raise doc.error(p + ("fractions_from",), "names the GPU whose measured fractions this file reuses; "
                        f"give them ({', '.join(_MEASURED_KEYS)}) or leave it out")
    return GpuSpec(model=_text(doc, p, m, "model"), arch=arch, fractions_from=borrowed,
                   count=num("count", int), bf16_tflops=num("bf16_tflops"),
                   hbm_gb=num("hbm_gb"), hbm_gbps=num("hbm_gbps"),
                   fp32_tflops=num("fp32_tflops", default=None),
                   tensor_tflops=tensor,
                   gemm_fractions=_gemm_fractions(doc, m.get("gemm_fractions"), tensor),
                   **{k: get(doc, p, m, k, t, default=None, positive=True, hi=LIMITS.get(k))
                      for k, t in _COMPUTE_KEYS.items()})


# optional gpu: keys of the compute model (embsim.workload.gpu_compute) and their types
_COMPUTE_KEYS = {"sms": int, "gemm_fraction": float, "hbm_fraction": float,
                 "l2_bytes_per_clk": float, "clock_mhz": float, "l2_gbps": float}
TENSOR_DTYPES = ("tf32", "bf16", "fp16", "fp8")
# the measured fractions gpu.fractions_from says are another GPU's
_MEASURED_KEYS = ("gemm_fraction", "gemm_fractions", "hbm_fraction")


def _tensor_tflops(doc: YamlDoc, m) -> tuple[tuple[str, float], ...]:
    """gpu.tensor_tflops: {dtype: dense TFLOPS}; a dtype left out is one the GPU lacks."""
    if m is None:
        return ()
    p = ("gpu", "tensor_tflops")
    check_mapping(doc, p, m, required=[], optional=list(TENSOR_DTYPES))
    return tuple((k, get(doc, p, m, k, float, positive=True, hi=LIMITS["bf16_tflops"]))
                 for k in TENSOR_DTYPES if k in m)


def _gemm_fractions(doc: YamlDoc, m, tensor) -> tuple[tuple[str, float], ...]:
    """gpu.gemm_fractions: {dtype: measured large-GEMM fraction of that dtype's peak}, for
    the dtypes a source measured; fp32 is the CUDA-core rate, the others need a tensor rate."""
    if m is None:
        return ()
    p = ("gpu", "gemm_fractions")
    have = {k for k, _ in tensor} if tensor else {"bf16", "fp16"}
    check_mapping(doc, p, m, required=[], optional=["fp32", *TENSOR_DTYPES])
    for k in m:
        if k != "fp32" and k not in have:
            raise doc.error(p + (k,), f"no {k} rate in gpu.tensor_tflops to take a fraction of")
    return tuple((k, get(doc, p, m, k, float, positive=True, hi=LIMITS["gemm_fraction"]))
                 for k in ("fp32", *TENSOR_DTYPES) if k in m)


def _fabric(doc: YamlDoc, m, gpu: GpuSpec) -> FabricSpec:
    p = ("fabric",)
    if not isinstance(m, dict):
        raise doc.error(p, "must be a mapping")
    kind = get(doc, p, m, "kind", str)
    if kind not in FABRIC_KINDS:
        raise doc.error(p + ("kind",), f"unknown fabric kind {kind!r} (one of {', '.join(FABRIC_KINDS)})")
    if kind == "host":
        required, optional = ["kind"] + _HOST_KEYS, []
    elif kind == "pcie":
        required, optional = ["kind"] + _PCIE_KEYS, _SOCKET_LINK_KEYS + _SOCKET_VIEW_KEYS + _P2P_KEYS + _C2C_KEYS
    elif kind == "nvswitch":
        required = ["kind", "nvswitches"] + _NVLINK_KEYS + _PCIE_KEYS
        optional = _SOCKET_LINK_KEYS + _SOCKET_VIEW_KEYS + _C2C_KEYS
    else:  # nvlink-mesh / nvlink-bridge: the PCIe tree is optional, all or nothing (the
        # socket link, NCCL's view of it and the GPUs' C2C links are part of it: read only with the tree)
        has_pcie = any(k in m for k in _PCIE_KEYS + _SOCKET_LINK_KEYS + _SOCKET_VIEW_KEYS + _C2C_KEYS)
        required = ["kind", "nvlink_pairs"] + _NVLINK_KEYS + (_PCIE_KEYS if has_pcie else [])
        optional = _SOCKET_LINK_KEYS + _SOCKET_VIEW_KEYS + _C2C_KEYS if has_pcie else []
    # fabric.interference: measured by `embsim calibrate` (see FabricSpec), any fabric kind
    check_mapping(doc, p, m, required=required,
                  optional=list(optional) + ["interference", "comm_interference"])
    if (kind == "host") != (gpu.arch == 0):
        raise doc.error(p + ("kind",), f"fabric kind {kind!r} with gpu.arch {gpu.arch}: "
                        "a CPU device (arch 0) goes with fabric kind host, and only it")

    def num(key, kind_=float, positive=True):
        return get(doc, p, m, key, kind_, default=None, positive=positive, hi=LIMITS.get(key))

    fields = dict(kind=kind)
    for key in ("interference", "comm_interference"):
        if key in m:
            fields[key] = get(doc, p, m, key, float, hi=LIMITS["interference"])
            if fields[key] < 0:
                raise doc.error(p + (key,), f"must be >= 0, got {fields[key]}")
    if kind == "host":
        fields.update(host_gbps=num("host_gbps"), host_latency_us=num("host_latency_us", positive=False))
    if "nvlink_gbps" in m:
        fields.update(nvlink_links_per_gpu=num("nvlink_links_per_gpu", int),
                      nvlink_gbps=num("nvlink_gbps"),
                      nvlink_latency_us=num("nvlink_latency_us", positive=False),
                      nvswitches=num("nvswitches", int))
    if "nvlink_pairs" in m:
        fields["nvlink_pairs"] = _nvlink_pairs(doc, m["nvlink_pairs"], gpu.count,
                                               fields["nvlink_links_per_gpu"])
    if "pcie_gbps" in m:
        sockets = num("cpu_sockets", int)
        vendor = get(doc, p, m, "cpu_vendor", str)
        if vendor not in CPU_VENDORS:
            raise doc.error(p + ("cpu_vendor",), f"must be one of {', '.join(CPU_VENDORS)}, got {vendor!r}")
        gen = num("pcie_gen", int)
        if not 1 <= gen <= 6:
            raise doc.error(p + ("pcie_gen",), f"must be 1..6, got {gen}")
        switches = get(doc, p, m, "pcie_switches", int, hi=LIMITS["pcie_switches"])
        if switches < 0:
            raise doc.error(p + ("pcie_switches",), f"must be >= 0, got {switches}")
        if sockets > 1:
            for key in _SOCKET_LINK_KEYS:
                if key not in m:
                    raise doc.error(p, f"missing required key '{key}' (cpu_sockets is {sockets})")
        model = get(doc, p, m, "cpu_model", str, default=None)
        if model is not None:
            if vendor != "intel":
                raise doc.error(p + ("cpu_model",), f"names an Intel generation; cpu_vendor is {vendor!r} "
                                "(NCCL keys an AMD or ARM socket link on the vendor alone)")
            if model not in CPU_MODELS:
                raise doc.error(p + ("cpu_model",), f"must be one of {', '.join(CPU_MODELS)}, got {model!r}")
        fields.update(pcie_gen=gen, pcie_lanes=num("pcie_lanes", int), pcie_gbps=num("pcie_gbps"),
                      pcie_latency_us=num("pcie_latency_us", positive=False), pcie_switches=switches,
                      cpu_sockets=sockets, cpu_vendor=vendor, cpu_link_gbps=num("cpu_link_gbps"),
                      cpu_latency_us=num("cpu_latency_us", positive=False), cpu_model=model,
                      nccl_cpu_link_gbps=num("nccl_cpu_link_gbps"))
        if any(k in m for k in _C2C_KEYS):
            missing = [k for k in _C2C_KEYS if k not in m]
            if missing:
                raise doc.error(p, f"missing required key '{missing[0]}' (the GPUs' NVLink-C2C link "
                                "needs both c2c_gbps and c2c_latency_us)")
            if switches:
                raise doc.error(p + ("c2c_gbps",), f"NVLink-C2C joins each GPU to its CPU directly; "
                                f"pcie_switches is {switches} (GPUs behind PCIe switches): set it to 0")
            fields.update(c2c_gbps=num("c2c_gbps"), c2c_latency_us=num("c2c_latency_us", positive=False))
    if "pcie_p2p" in m:
        fields["pcie_p2p"] = get(doc, p, m, "pcie_p2p", bool)
    for key in ("nvlink_latency_us", "pcie_latency_us", "cpu_latency_us", "host_latency_us", "c2c_latency_us"):
        if fields.get(key) is not None and fields[key] < 0:
            raise doc.error(p + (key,), f"must be >= 0, got {fields[key]}")
    return FabricSpec(**fields)


def _nvlink_pairs(doc: YamlDoc, value, n_gpus: int, links_per_gpu: int):
    p = ("fabric", "nvlink_pairs")
    if not isinstance(value, list) or not value:
        raise doc.error(p, "must be a non-empty list of [gpu_a, gpu_b, links]")
    pairs, seen, used = [], set(), [0] * n_gpus
    for i, item in enumerate(value):
        ok = (isinstance(item, list) and len(item) == 3
              and all(isinstance(x, int) and not isinstance(x, bool) for x in item))
        if not ok:
            raise doc.error(p + (i,), f"must be [gpu_a, gpu_b, links] (integers), got {item!r}")
        a, b, links = item
        if not (0 <= a < n_gpus and 0 <= b < n_gpus) or a == b:
            raise doc.error(p + (i,), f"GPUs must be two different indices in 0..{n_gpus - 1}, got {a}, {b}")
        if links < 1:
            raise doc.error(p + (i,), f"links must be >= 1, got {links}")
        if frozenset((a, b)) in seen:
            raise doc.error(p + (i,), f"pair {a}-{b} listed twice")
        seen.add(frozenset((a, b)))
        used[a] += links
        used[b] += links
        pairs.append((a, b, links))
    for g, n in enumerate(used):
        if n > links_per_gpu:
            raise doc.error(p, f"GPU {g} uses {n} NVLinks, more than nvlink_links_per_gpu {links_per_gpu}")
    return tuple(pairs)


def _nics(doc: YamlDoc, m, gpu: GpuSpec, fabric: FabricSpec) -> NicSpec:
    p = ("nics",)
    if not isinstance(m, dict):
        raise doc.error(p, "must be a mapping")
    count = get(doc, p, m, "count", int, hi=LIMITS["nics"])
    if count < 0:
        raise doc.error(p + ("count",), f"must be >= 0, got {count}")
    if count == 0:
        check_mapping(doc, p, m, required=["count"], optional=["gbit", "latency_us", "gpus"])
        return NicSpec(count=0)
    check_mapping(doc, p, m, required=["count", "gbit", "latency_us"], optional=["gpus", "nccl_latency_us", "nccl_group", "nccl_local_gpus", "nccl_tuner", "nccl_proto",
                      "nccl_algo", "nccl_env"])
    if not fabric.has_pcie and fabric.kind != "host":
        raise doc.error(p + ("count",), "NICs attach to the PCIe tree: the fabric needs its pcie_* keys")
    latency = get(doc, p, m, "latency_us", float, hi=LIMITS["latency_us"])
    if latency < 0:
        raise doc.error(p + ("latency_us",), f"must be >= 0, got {latency}")
    if "gpus" in m:
        gpus = _nic_gpus(doc, m["gpus"], count, gpu.count)
    else:  # even split, in order: NIC k serves a contiguous block of GPUs
        gpus = tuple(tuple(g for g in range(gpu.count) if g * count // gpu.count == k)
                     or (k * gpu.count // count,) for k in range(count))
    reported = (get(doc, p, m, "nccl_latency_us", float, hi=LIMITS["latency_us"])
                if "nccl_latency_us" in m else 0.0)
    if reported < 0:
        raise doc.error(p + ("nccl_latency_us",), f"must be >= 0, got {reported}")
    group = get(doc, p, m, "nccl_group", int, default=1, positive=True, hi=LIMITS["nics"])
    if count % group:
        raise doc.error(p + ("nccl_group",), f"must divide nics.count {count}, got {group}")
    local = get(doc, p, m, "nccl_local_gpus", int, default=1, positive=True, hi=gpu.count)
    tuner = str(m.get("nccl_tuner") or "")
    if tuner and tuner not in NCCL_TUNERS:
        raise doc.error(p + ("nccl_tuner",), f"unknown tuner {tuner!r} (known: {', '.join(NCCL_TUNERS)})")
    proto = _nccl_filter(doc, m.get("nccl_proto"), "proto")
    algo = _nccl_filter(doc, m.get("nccl_algo"), "algo")
    return NicSpec(count=count, gbit=get(doc, p, m, "gbit", float, positive=True, hi=LIMITS["gbit"]),
                   latency_us=latency, gpus=gpus, nccl_latency_us=reported, nccl_group=group,
                   nccl_local_gpus=local, nccl_tuner=tuner, nccl_proto=proto, nccl_algo=algo,
                   nccl_env=_nccl_env(doc, m.get("nccl_env")))


def _nccl_filter(doc: YamlDoc, value, kind: str) -> str:
    """nics.nccl_proto / nics.nccl_algo: NCCL_PROTO / NCCL_ALGO syntax ("Simple",
    "Ring,Tree", "^LL128"), kept as written."""
    if value is None:
        return ""
    key = f"nccl_{kind}"
    try:
        parse_filter(str(value), kind, f"nics.{key}")
    except InputError as e:
        raise doc.error(("nics", key), str(e).removeprefix(f"nics.{key} ")) from None
    return str(value).strip()


def _nccl_env(doc: YamlDoc, value) -> tuple[tuple[str, int], ...]:
    """nics.nccl_env: {NCCL_BUFFSIZE: 8388608, ...}, the names collectives.nccl_env models."""
    if value is None:
        return ()
    if not isinstance(value, dict) or not value:
        raise doc.error(("nics", "nccl_env"), "must be a mapping of NCCL_* names to byte counts")
    try:
        return parse_env_values(value, where="nics.nccl_env")
    except InputError as e:
        raise doc.error(("nics", "nccl_env"), str(e).removeprefix("nics.nccl_env ")) from None


def _nic_gpus(doc: YamlDoc, value, count: int, n_gpus: int):
    p = ("nics", "gpus")
    if not isinstance(value, list) or len(value) != count:
        raise doc.error(p, f"must be a list of {count} GPU lists (one per NIC)")
    out, served = [], set()
    for k, item in enumerate(value):
        if (not isinstance(item, list) or not item
                or not all(isinstance(g, int) and not isinstance(g, bool) and 0 <= g < n_gpus for g in item)):
            raise doc.error(p + (k,), f"must be a non-empty list of GPU indices 0..{n_gpus - 1}, got {item!r}")
        out.append(tuple(item))
        served.update(item)
    missing = sorted(set(range(n_gpus)) - served)
    if missing:
        raise doc.error(p, f"GPU(s) {missing} served by no NIC")
    return tuple(out)


def _network(doc: YamlDoc, m) -> NetworkSpec:
    p = ("network",)
    check_mapping(doc, p, m, required=["switch_latency_us"],
                  optional=["kind", "oversubscription", "nodes_per_leaf", "spines", "radix",
                            "spine_oversubscription", "sharp"])
    kind = get(doc, p, m, "kind", str, default="rail-fat-tree")
    if kind not in NETWORK_KINDS:
        raise doc.error(p + ("kind",), f"unknown network kind {kind!r} (one of {', '.join(NETWORK_KINDS)})")
    latency = get(doc, p, m, "switch_latency_us", float, hi=LIMITS["latency_us"])
    if latency < 0:
        raise doc.error(p + ("switch_latency_us",), f"must be >= 0, got {latency}")
    return NetworkSpec(kind=kind,
                       oversubscription=get(doc, p, m, "oversubscription", float, default=1.0,
                                            positive=True, hi=LIMITS["oversubscription"]),
                       switch_latency_us=latency,
                       nodes_per_leaf=get(doc, p, m, "nodes_per_leaf", int, default=None,
                                          positive=True, hi=LIMITS["nodes"]),
                       spines=get(doc, p, m, "spines", int, default=1, positive=True,
                                  hi=LIMITS["spines"]),
                       radix=get(doc, p, m, "radix", int, default=None, positive=True,
                                 hi=LIMITS["radix"]),
                       spine_oversubscription=get(doc, p, m, "spine_oversubscription", float, default=1.0,
                                                  positive=True, hi=LIMITS["oversubscription"]),
                       sharp=get(doc, p, m, "sharp", bool, default=False))


def _servers(doc: YamlDoc, m) -> ServerSpec:
    p = ("parameter_servers",)
    check_mapping(doc, p, m, required=[], optional=["nodes", "nics", "nic_gbit", "latency_us", "sum_gbps",
                                                     "host_memory_gb"])
    latency = get(doc, p, m, "latency_us", float, default=None, hi=LIMITS["latency_us"])
    if latency is not None and latency < 0:
        raise doc.error(p + ("latency_us",), f"must be >= 0, got {latency}")
    return ServerSpec(nodes=get(doc, p, m, "nodes", int, default=None, positive=True, hi=LIMITS["nodes"]),
                      nics=get(doc, p, m, "nics", int, default=1, positive=True, hi=LIMITS["nics"]),
                      nic_gbit=get(doc, p, m, "nic_gbit", float, default=None, positive=True,
                                   hi=LIMITS["gbit"]),
                      latency_us=latency,
                      sum_gbps=get(doc, p, m, "sum_gbps", float, default=20.0, positive=True,
                                   hi=LIMITS["host_gbps"]),
                      sum_gbps_given="sum_gbps" in m,
                      host_memory_gb=get(doc, p, m, "host_memory_gb", float, default=None, positive=True,
                                         hi=LIMITS["host_memory_gb"]))

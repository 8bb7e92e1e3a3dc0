"""Cluster topology: YAML node types + cluster shape -> a graph of GPUs, switches, NICs and links.

    topo = load_topology("dgx-h100:16x8")
    topo.route(0, 9)        # link ids, GPU 0 of node 0 -> GPU 1 of node 1
    topo.capacity           # bytes/s per link id
"""

from .build import Link
from .clusterspec import (DEFAULT_PRESET, TopologySpec, find_preset, list_presets, load_node,
                          load_topology, preset_dirs, spec_beside)
from .nccl_view import nccl_path_type
from .parse import load_node_type, parse_node_type
from .spec import FabricSpec, GpuSpec, NetworkSpec, NicSpec, NodeType, TopologyError
from .topology import Topology

__all__ = [
    "DEFAULT_PRESET", "FabricSpec", "find_preset", "GpuSpec", "Link", "NetworkSpec", "NicSpec",
    "NodeType", "Topology", "TopologyError", "TopologySpec", "list_presets", "load_node", "load_node_type",
    "load_topology", "nccl_path_type", "parse_node_type", "preset_dirs", "spec_beside",
]

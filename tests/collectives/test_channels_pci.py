"""NCCL's graph search across PCIe (channels._search_ring with pci_rings.PciLayout).

Expected (nChannels, bwIntra) derived by hand from NCCL's source (v2.21.5-1 lines; the same
code v2.18.1-v2.30.7):

- Speeds tried (search.cc 850 speedArrayIntra): 40 30 20 18 15 12 10 9 7 6 5 4 3, from
  the first <= maxBw (the best GPU-GPU path bandwidth = the GPU's PCI link here), down
  while none is found or the next speed is > 0.49 of the best found (search.cc 991); the
  best is the most nChannels x bw, ties keep the first (search.cc 380-384). No channel
  duplication below 25 GB/s (ncclTopoDupChannels). Pass 2 raises a ring's speed with the
  channels fixed (search.cc 1014-1030).
- A PCI link is width x speed / 80: Gen3 x16 12, Gen4 x16 24 GB/s (topo.cc, PCI_BW 12).
- A channel is charged s on every link of each path it takes, 6/5 s on the PCI links of a
  PHB path through an Intel CPU (search.cc 70-79, topo.h 31 INTEL_P2P_OVERHEAD); GPUs
  behind one switch without P2P go up the switch's uplink and down again (paths.cc 574).

pcie-rtx2080ti-switch 1x2 (2080 Ti pair behind one Gen3 switch, P2P off, Intel): the ring's
  two hops both climb the uplink: 2 x 1.2 s <= 12 -> s <= 5: ring (1, 5). The tree (a chain,
  one hop): 1.2 s <= 12 -> (1, 10).
pcie-rtx2080ti-switch 1x8 (2 per switch, 4 switches, 2 sockets): a switch's uplink carries
  its two GPUs' outgoing hops, both PHB: 2.4 s <= 12 -> (1, 5), ring and chain.
pcie-rtx2080ti 1x2 and 1x8 (root ports, 4 per socket, SKL QPI 10): each GPU's link carries
  one PHB hop, 1.2 s <= 12 -> 10; the socket link one SYS hop each way (s <= 10):
  (1, 10); 2 channels at 5 also make 10 and do not replace it.
pcie-rtx2080ti-nvlink 1x8 (bridged pairs, root ports): the hops between pairs are PHB or
  SYS as above: (1, 10). A bridged pair alone is an NVLink communicator: (2, 20) as before.
pcie-rtx3090 1x8 (4 per Gen4 switch, a switch per socket, P2P on): hops inside a switch are
  PIX (s on 24 GB/s links), the two socket crossings SYS over QPI 10: (1, 10). 1x4 (one
  switch): PIX only, 24 / s: 20 gives 1 x 20, 12 gives 2 x 12 = 24 = totalBw: (2, 12).
l40s-roce 1x8 (2 per Gen4 switch, 4 switches, 2 sockets, SRP QPI 22): the hop between the
  two switches of a socket is PHB, 1.2 s on 24 GB/s links -> 20; QPI 20 <= 22: (1, 20).
azure-nc-a100-v4 1x4 (AMD, a GPU per NUMA node, NVLink pairs 0-1, 2-3): two SYS hops over
  the AMD socket links (AMD_BW 16), no Intel overhead: 15 is the fastest speed <= 16: (1, 15).
parallax-titanxp-ib 1x6 (3 per socket on root ports, Broadwell QPI 6): (1, 6).
pcie-rtx4090 1x2 (4090 pair behind one Gen4 switch, P2P off, Intel): as the 2080 Ti pair on
  24 GB/s links: ring 2 x 1.2 s <= 24 -> (1, 10), chain 1.2 s <= 24 -> (1, 20). 1x8 (2 per
  switch, 4 switches, 2 sockets, SKL QPI 10): an uplink carries two PHB hops, 2.4 s <= 24, and
  the socket link one SYS hop each way, s <= 10: (1, 10), ring and chain.
aws-g5 1x4 (4 A10Gs on one NUMA node's root ports, AMD, g5.48xl-topo.xml): each GPU's 24 GB/s
  link carries one PHB hop, no Intel overhead: 20 gives 1 x 20, 12 gives 2 x 12 = 24: (2, 12),
  ring and chain (as pcie-rtx3090 1x4). 1x8 (two NUMA nodes): the ring and the chain cross the
  AMD socket link (AMD_BW 16) once each way: 15 is the fastest speed <= 16: (1, 15).
"""

from __future__ import annotations

import pytest

from embsim.collectives.channels import search_graphs
from embsim.collectives.pci_rings import INTEL_P2P_OVERHEAD, PciLayout
from embsim.collectives.shape import comm_shape
from embsim.topology.clusterspec import load_topology

PARALLAX = "embsim/validation_data/rankings/topologies/parallax-titanxp-ib.yaml"

CASES = [
    ("pcie-rtx2080ti-switch:1x2", (1, 5.0), (1, 10.0)),
    ("pcie-rtx2080ti-switch:1x8", (1, 5.0), (1, 5.0)),
    ("pcie-rtx2080ti:1x2", (1, 10.0), (1, 10.0)),
    ("pcie-rtx2080ti:1x8", (1, 10.0), (1, 10.0)),
    ("pcie-rtx2080ti-nvlink:1x8", (1, 10.0), (1, 10.0)),
    ("pcie-rtx2080ti-nvlink:1x2", (2, 20.0), (2, 20.0)),
    ("pcie-rtx3090:1x8", (1, 10.0), (1, 10.0)),
    ("pcie-rtx3090:1x4", (2, 12.0), (2, 12.0)),
    ("l40s-roce:1x8", (1, 20.0), (1, 20.0)),
    ("azure-nc-a100-v4:1x4", (1, 15.0), (1, 15.0)),
    (PARALLAX + ":1x6", (1, 6.0), (1, 6.0)),
    ("pcie-rtx4090:1x2", (1, 10.0), (1, 20.0)),
    ("pcie-rtx4090:1x8", (1, 10.0), (1, 10.0)),
    ("aws-g5:1x4", (2, 12.0), (2, 12.0)),
    ("aws-g5:1x8", (1, 15.0), (1, 15.0)),
]


def _graphs(spec: str):
    t = load_topology(spec)
    shape = comm_shape(t, list(range(t.n_gpus)))
    return shape, search_graphs(shape)


@pytest.mark.parametrize("spec,ring,tree", CASES)
def test_search_matches_nccl_source(spec, ring, tree):
    _, g = _graphs(spec)
    assert (g.ring.n_channels, g.ring.bw_intra) == ring
    assert (g.tree.n_channels, g.tree.bw_intra) == tree
    assert g.comm_channels == 2 * ring[0]          # connect.cc: 2 x ring channels


def test_kernel_keeps_the_per_gpu_link_view():
    """The kernels' data rate is modelled on each GPU's own link (12 GB/s on Gen3 x16), not
    on NCCL's search margin: 1 ring at 12 for the AutoDL pair, whatever the search says."""
    _, g = _graphs("pcie-rtx2080ti-switch:1x2")
    k = g.for_kernel()
    assert (k.ring.n_channels, k.ring.bw_intra) == (1, 12.0)
    assert (g.ring.n_channels, g.ring.bw_intra) == (1, 5.0)
    shape, g = _graphs("dgx-a100:1x8")        # NVSwitch: no PCIe layout, one view
    assert shape.pci is None and g.for_kernel() is g


def _pair(**kw) -> PciLayout:
    base = dict(gpus=((0, 0), (0, 0)), p2p=False, intel=True, pci_bw=12.0, cpu_bw=10.0)
    base.update(kw)
    return PciLayout(**base)


def test_p2p_off_routes_through_the_uplink_both_ways():
    lay = _pair()
    kind, links = lay.hop(0, 1)
    assert kind == "PHB" and links == [("up", 0), ("sw_up", 0), ("sw_down", 0), ("down", 1)]
    assert lay.loads(chain=False)[("sw_up", 0)] == pytest.approx(2 * INTEL_P2P_OVERHEAD)
    assert lay.channels_at(5.0) == 1 and lay.channels_at(6.0) == 0


def test_p2p_on_behind_a_switch_is_pix_and_stays_below_it():
    lay = _pair(p2p=True)
    kind, links = lay.hop(0, 1)
    assert kind == "PIX" and links == [("up", 0), ("down", 1)]
    assert lay.channels_at(12.0) == 1 and lay.channels_at(6.0) == 2


def test_intel_overhead_only_on_intel_phb_paths():
    root = dict(gpus=((0, -1), (0, -1)), p2p=True)
    assert _pair(**root, intel=True).channels_at(12.0) == 0     # 1.2 x 12 > 12
    assert _pair(**root, intel=False).channels_at(12.0) == 1    # AMD: no overhead
    cross = dict(gpus=((0, -1), (1, -1)), p2p=True, cpu_bw=100.0)
    assert _pair(**cross, intel=True).channels_at(12.0) == 1    # SYS: no overhead either


def test_a_bridged_pair_takes_no_pci_link():
    lay = _pair(gpus=((0, -1), (0, -1), (0, -1), (0, -1)), nvlink=frozenset({(0, 1), (2, 3)}))
    loads = lay.loads(chain=False)
    assert ("up", 0) not in loads and ("up", 1) in loads and ("down", 2) in loads


def test_the_kernels_run_the_channels_nccls_search_keeps():
    # Across PCIe the kernels launch NCCL's channels (connect.cc: 2 CTAs a ring), each at
    # most as fast as a channel on the GPU's own link: where the socket link leaves NCCL one
    # ring, the kernels move half what the two rings on each GPU's link would.
    from embsim.collectives.channels import Graph, _kernel_graph
    nccl = Graph("ring", 1, 18, 18, "PCI")
    link = Graph("ring", 2, 24, 24, "PCI")
    k = _kernel_graph(nccl, link)
    assert (k.n_channels, k.bw_intra, k.total_bw) == (1, 24, 24)
    # never more than the link in total, however many channels NCCL keeps
    assert _kernel_graph(Graph("ring", 4, 6, 6, "PCI"), link).total_bw == 48
    # a slower file link scales the link's total later, not one channel's cap
    slow = _kernel_graph(nccl, link, fabric_ratio=0.5)
    assert slow.total_bw * 0.5 == pytest.approx(24)
    shape = comm_shape(load_topology("l40s-roce"), range(8))
    graphs = search_graphs(shape)
    assert graphs.for_kernel().ring.n_channels == graphs.ring.n_channels == 1


@pytest.mark.parametrize("vendor, gpus, version, level", [
    ("intel", 8, "2.21.5", "PXB"), ("arm", 8, "2.21.5", "PXB"), ("amd", 8, "2.22.3", "SYS"),
    ("amd", 8, "2.23.4", "PXB"), ("amd", 2, "2.27.7", "SYS"), ("intel", 2, "2.27.7", "PXB"),
])
def test_nccls_p2p_level_follows_the_host_and_the_release(vendor, gpus, version, level):
    # paths.cc ncclTopoCheckP2p: PATH_SYS through 2.22 but PXB on Intel/ARM/Zhaoxin; from
    # 2.23 PXB everywhere but an AMD node of <= 2 GPUs
    from embsim.collectives.pci_rings import p2p_level
    assert p2p_level(vendor, gpus, version) == level


def test_gpu_to_gpu_rings_across_pcie_run_at_their_ctas_rate():
    """An AMD root-port box with P2P on: NCCL's search keeps one ring (AMD_BW 16 from 2.19),
    launched as 2 CTAs of ~11.1 GB/s each (PCIE_P2P_CTA_GBPS): ~22 GB/s, not the 12 a
    channel on a Gen4 x16 link would be rated alone (blog.chlc.cc 8x RTX 4090: 20.6
    measured). From 2.23 NCCL stages such a box through host memory (P2P level PXB): the
    host-staged rule stays."""
    from embsim.collectives.channels import CTAS_PER_RING_CHANNEL, PCIE_P2P_CTA_GBPS
    from embsim.collectives.constants import constants_for
    for version, p2p, kernel_bw in (("2.21.5", True, CTAS_PER_RING_CHANNEL * PCIE_P2P_CTA_GBPS),
                                    ("2.27.7", False, 12.0)):
        shape = comm_shape(load_topology("aws-g5:1x8"), range(8), version)
        assert shape.pci.ring_peer_to_peer is p2p
        graphs = search_graphs(shape, constants_for(version))
        assert (graphs.ring.n_channels, graphs.kernel_ring.n_channels) == (1, 1)
        assert graphs.kernel_ring.bw_intra == pytest.approx(kernel_bw)
    # on an Intel host the hops between two switches (PHB) are host-staged (P2P level PXB)
    # whatever the driver allows; the four GPUs of one switch talk peer-to-peer (PIX)
    intel = comm_shape(load_topology("pcie-rtx3090:1x8"), range(8), "2.21.5")
    assert intel.pci.p2p and not intel.pci.ring_peer_to_peer
    assert comm_shape(load_topology("pcie-rtx3090:1x4"), range(4), "2.21.5").pci.ring_peer_to_peer
    # never more than the link in total
    from embsim.collectives.channels import Graph, _kernel_graph
    link = Graph("ring", 2, 12, 12, "PCI")
    assert _kernel_graph(Graph("ring", 1, 15, 15, "PCI"), link, cta_bw=11.1).total_bw == pytest.approx(22.2)
    assert _kernel_graph(Graph("ring", 2, 12, 12, "PCI"), link, cta_bw=11.1).total_bw == pytest.approx(24)

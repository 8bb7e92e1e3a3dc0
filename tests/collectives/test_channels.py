"""NCCL's graph search (channels.search_graphs) on several nodes: what a faster NIC does.

"A faster NIC gives fewer NCCL channels" is NCCL's own search, not a bug. ncclTopoCompute
(search.cc, v2.18-v2.30 alike) tries the per-channel speeds of sm90SpeedArrayInter
(48 45 42 40 30 24 22 20 17.5 15 12 6 ...) from the first under maxBw (the best GPU -> NET
path: min(PCIe Gen5 x16 48, the NIC's Gb/s / 8)), keeps the graph with the most
nChannels x bw (ncclTopoCompareGraphs), and goes on lowering the speed while the next one
is more than .49 of the best found ("Decrease bw until we find a solution"); a ring channel
charges its speed on its NIC each way and on every GPU's NVLink (18 x 20.6 = 370.8 GB/s).
dgx-h100 2x8, ring:
- 300 Gb/s NICs (37.5 GB/s): 30 fits one channel per NIC, 8 x 30 = 240; 17.5 fits two,
  16 x 17.5 = 280; 12 fits three, 24 x 12 = 288, the best (6 is .5 of 12, tried: 32 x 6 =
  192); 12 < 25 GB/s so ncclTopoDupChannels leaves it: 24 channels of 12.
- 400 Gb/s NICs (48, PCIe-bound): 48 fits 7 on NVLink (336), 45 fits 8 (360); 24 ties at
  15 x 24 = 360 (a tie keeps the first), 17.5 / 45 < .49 stops the descent; 45 < 50 on sm90
  with more than 4 channels is not duplicated either: 8 channels of 45.
The faster NIC's graph has a third of the channels and 25 % more bandwidth.
"""

from __future__ import annotations

import pytest

from embsim.collectives.channels import search_graphs
from embsim.collectives.shape import comm_shape
from embsim.topology import find_preset, load_topology


@pytest.fixture
def dgx_h100_with_nic(tmp_path):
    text = find_preset("dgx-h100").read_text()
    line = next(l for l in text.splitlines() if l.startswith("  gbit: 400"))

    def load(gbit: int):
        path = tmp_path / f"dgx-h100-nic{gbit}.yaml"
        path.write_text(text.replace(line, f"  gbit: {gbit}"))
        return load_topology(f"{path}:2x8")
    return load


def test_a_faster_nic_gives_fewer_faster_ring_channels(dgx_h100_with_nic):
    graphs = {}
    for gbit in (300, 400):
        shape = comm_shape(dgx_h100_with_nic(gbit), range(16))
        graphs[gbit] = search_graphs(shape).ring
    slow, fast = graphs[300], graphs[400]
    assert (slow.n_channels, slow.bw_intra, slow.bw_inter) == (24, 12, 12)
    assert (fast.n_channels, fast.bw_intra, fast.bw_inter) == (8, 45, 45)
    assert fast.total_bw > slow.total_bw          # 360 > 288 GB/s: what the search maximises

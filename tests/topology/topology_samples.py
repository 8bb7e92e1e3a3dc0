import textwrap

import pytest

# A small, valid node type; tests mutate it to produce bad input.
SMALL_PCIE = textwrap.dedent("""\
    name: small
    gpu:
      model: test-gpu
      arch: 80
      count: 4
      bf16_tflops: 100
      hbm_gb: 16
      hbm_gbps: 1000
    fabric:
      kind: pcie
      pcie_gen: 4
      pcie_lanes: 16
      pcie_gbps: 31
      pcie_latency_us: 1.0
      pcie_switches: 2
      cpu_sockets: 2
      cpu_vendor: intel
      cpu_link_gbps: 10
      cpu_latency_us: 1.0
    nics:
      count: 2
      gbit: 100
      latency_us: 0.5
      gpus: [[0, 1], [2, 3]]
    network:
      kind: rail-fat-tree
      switch_latency_us: 0.1
    """)

LOCAL_CPU = textwrap.dedent("""\
    name: local-cpu
    description: CPU-only calibration host, links fitted from gloo
    gpu:
      model: cpu
      arch: 0
      count: 4
      bf16_tflops: 1.5
      hbm_gb: 64
      hbm_gbps: 40
    fabric:
      kind: host
      host_gbps: 5.0
      host_latency_us: 20
    nics:
      count: 0
    """)


@pytest.fixture
def write_yaml(tmp_path):
    def write(text, name="node.yaml"):
        path = tmp_path / name
        path.write_text(text)
        return path
    return write

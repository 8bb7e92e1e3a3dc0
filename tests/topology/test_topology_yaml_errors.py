import pytest

from embsim.topology import TopologyError, load_topology, parse_node_type

from topology_samples import SMALL_PCIE, write_yaml  # noqa: F401 (fixture)


def _error(write_yaml, text) -> str:
    path = write_yaml(text)
    with pytest.raises(TopologyError) as info:
        load_topology(str(path))
    msg = str(info.value)
    assert str(path) in msg and "\n" not in msg
    return msg


def _line_of(text, needle):
    return next(i + 1 for i, line in enumerate(text.splitlines()) if needle in line)


def test_valid_base_file_loads(write_yaml):
    assert load_topology(str(write_yaml(SMALL_PCIE))).n_gpus == 4


def test_unknown_key_names_key_and_line(write_yaml):
    text = SMALL_PCIE.replace("  hbm_gbps: 1000\n", "  hbm_gbps: 1000\n  hbm_speed: 3\n")
    msg = _error(write_yaml, text)
    assert "gpu.hbm_speed" in msg and f"line {_line_of(text, 'hbm_speed')}" in msg and "unknown key" in msg


def test_key_that_does_not_apply_to_fabric_kind(write_yaml):
    text = SMALL_PCIE.replace("  pcie_gen: 4\n", "  pcie_gen: 4\n  nvlink_gbps: 300\n")
    msg = _error(write_yaml, text)
    assert "fabric.nvlink_gbps" in msg and f"line {_line_of(text, 'nvlink_gbps')}" in msg


def test_wrong_type(write_yaml):
    text = SMALL_PCIE.replace("count: 4", "count: four")
    msg = _error(write_yaml, text)
    assert "gpu.count" in msg and "must be an integer" in msg and f"line {_line_of(text, 'count: four')}" in msg


def test_missing_field(write_yaml):
    text = SMALL_PCIE.replace("  pcie_gbps: 31\n", "")
    msg = _error(write_yaml, text)
    assert "missing required key 'pcie_gbps'" in msg and "fabric" in msg and "line" in msg


def test_missing_socket_link_when_two_sockets(write_yaml):
    msg = _error(write_yaml, SMALL_PCIE.replace("  cpu_link_gbps: 10\n", ""))
    assert "cpu_link_gbps" in msg and "cpu_sockets is 2" in msg


def _bridged(pairs: str) -> str:
    """Four GPUs on NVLink bridges `pairs`, no PCIe tree described, no NICs."""
    return "\n".join([
        "name: bridged",
        "gpu: {model: g, arch: 86, count: 4, bf16_tflops: 70, hbm_gb: 24, hbm_gbps: 936}",
        "fabric:",
        "  kind: nvlink-bridge",
        "  nvlink_links_per_gpu: 4",
        "  nvlink_gbps: 56",
        "  nvlink_latency_us: 1",
        f"  nvlink_pairs: {pairs}",
        "nics: {count: 0}",
    ])


def test_disconnected_graph(write_yaml):
    # NVLink bridges 0-1 and 2-3, no PCIe tree described: two islands.
    text = _bridged("[[0, 1, 4], [2, 3, 4]]")
    msg = _error(write_yaml, text)
    assert "disconnected" in msg and "fabric.nvlink_pairs" in msg and f"line {_line_of(text, 'nvlink_pairs')}" in msg
    assert "gpu0" in msg and "gpu2" in msg
    # The same pairs plus a ring closure are connected and route over NVLink only.
    ok = parse_node_type(text.replace("[2, 3, 4]]", "[1, 2, 2], [2, 3, 2]]").replace("[0, 1, 4]", "[0, 1, 2]"))
    assert ok.fabric.nvlink_pairs[1] == (1, 2, 2)


def test_socket_view_keys_need_the_pcie_tree_on_an_nvlink_fabric(write_yaml):
    """cpu_model / nccl_cpu_link_gbps describe the PCIe tree's socket link: on an NVLink
    fabric without that tree they were accepted and then silently dropped."""
    text = _bridged("[[0, 1, 2], [1, 2, 2], [2, 3, 2]]")
    assert parse_node_type(text).fabric.cpu_model is None
    for key, value in (("cpu_model", "skylake"), ("nccl_cpu_link_gbps", 7)):
        with_key = text.replace("  nvlink_latency_us: 1", f"  nvlink_latency_us: 1\n  {key}: {value}")
        msg = _error(write_yaml, with_key)
        assert "missing required key 'pcie_gen'" in msg and "fabric" in msg


@pytest.mark.parametrize("old, new, expect", [
    ("kind: pcie", "kind: pci", "unknown fabric kind 'pci'"),
    ("cpu_vendor: intel", "cpu_vendor: via", "cpu_vendor"),
    ("gpus: [[0, 1], [2, 3]]", "gpus: [[0, 1], [1]]", "GPU(s) [2, 3] served by no NIC"),
    ("gpus: [[0, 1], [2, 3]]", "gpus: [[0, 1, 2, 3]]", "list of 2 GPU lists"),
    ("kind: rail-fat-tree", "kind: torus", "unknown network kind"),
    ("arch: 80", "arch: 0", "CPU device"),
    ("bf16_tflops: 100", "bf16_tflops: -1", "must be positive"),
    ("pcie_gen: 4", "pcie_gen: 9", "1..6"),
    ("gpus: [[0, 1], [2, 3]]", "gpus: [[0, 1], [2, 3]]\n  nccl_tuner: aws-ofi-nccl-p6", "unknown tuner"),
])
def test_bad_values(write_yaml, old, new, expect):
    assert old in SMALL_PCIE
    msg = _error(write_yaml, SMALL_PCIE.replace(old, new))
    assert expect in msg and "line" in msg


def test_network_required_with_nics(write_yaml):
    text = SMALL_PCIE.split("network:")[0]
    assert "missing required key 'network'" in _error(write_yaml, text)


def test_not_yaml(write_yaml):
    assert "not valid YAML" in _error(write_yaml, "name: [unclosed\n")


def test_c2c_needs_both_keys_and_gpus_on_root_ports(write_yaml):
    """fabric.c2c_gbps joins each GPU to its CPU over NVLink-C2C: it needs its latency, and a
    GPU behind a PCIe switch has no C2C link to give it."""
    one = SMALL_PCIE.replace("  cpu_latency_us: 1.0\n", "  cpu_latency_us: 1.0\n  c2c_gbps: 450\n")
    assert "missing required key 'c2c_latency_us'" in _error(write_yaml, one)
    both = one.replace("  c2c_gbps: 450\n", "  c2c_gbps: 450\n  c2c_latency_us: 1.0\n")
    msg = _error(write_yaml, both)
    assert "fabric.c2c_gbps" in msg and "pcie_switches is 2" in msg
    node = parse_node_type(both.replace("pcie_switches: 2", "pcie_switches: 0"))
    assert (node.fabric.c2c_gbps, node.fabric.c2c_latency_us) == (450, 1.0)
    negative = both.replace("pcie_switches: 2", "pcie_switches: 0").replace("c2c_gbps: 450", "c2c_gbps: -4")
    assert "must be positive" in _error(write_yaml, negative)

"""topology/parse.py: a node's host memory (host_memory_gb), optional, checked like every
other number; every shipped preset gives it from a vendor figure or says why not."""

from pathlib import Path

import pytest

from embsim.topology import TopologyError, load_topology
from embsim.topology.parse import parse_node_type

from topology_samples import SMALL_PCIE, write_yaml  # noqa: F401 (fixture)

ROOT = Path(__file__).resolve().parents[2]
PRESETS = sorted((ROOT / "topologies").glob("*.yaml")) + sorted(
    (ROOT / "embsim" / "validation_data" / "topologies").glob("*.yaml"))


def test_host_memory_is_optional_and_read_in_gib():
    assert parse_node_type(SMALL_PCIE).host_memory_gb is None
    node = parse_node_type(SMALL_PCIE + "host_memory_gb: 512\n")
    assert node.host_memory_gb == 512.0
    servers = parse_node_type(SMALL_PCIE + "parameter_servers:\n  host_memory_gb: 768\n").servers
    assert servers.host_memory_gb == 768.0


@pytest.mark.parametrize("text, key", [
    ("host_memory_gb: -1\n", "host_memory_gb"),
    ("host_memory_gb: lots\n", "host_memory_gb"),
    ("host_memory_gb: 1.0e+12\n", "host_memory_gb"),
    ("parameter_servers:\n  host_memory_gb: 0\n", "parameter_servers.host_memory_gb"),
])
def test_a_bad_host_memory_is_one_line_naming_file_and_key(write_yaml, text, key):
    path = write_yaml(SMALL_PCIE + text)
    with pytest.raises(TopologyError) as info:
        load_topology(str(path))
    msg = str(info.value)
    assert str(path) in msg and key in msg and "\n" not in msg


def test_a_bad_host_memory_exits_2_without_a_traceback(write_yaml, capsys):
    from embsim.cli import main
    path = write_yaml(SMALL_PCIE + "host_memory_gb: -4\n")
    assert main(["topology", "show", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("embsim: error:") and "host_memory_gb" in err and err.count("\n") == 1


@pytest.mark.parametrize("path", PRESETS, ids=lambda p: p.stem)
def test_every_shipped_preset_gives_its_host_memory_or_says_why_not(path):
    """A figure has its source beside it; a preset without one says so in the file, and
    the run then says 'host memory unknown: not checked' rather than assume one."""
    lines = [line for line in path.read_text().splitlines() if "host_memory_gb" in line]
    assert len(lines) == 1, path
    line = lines[0]
    if line.startswith("#"):
        assert "host memory unknown, not checked" in line
        assert load_topology(str(path)).node.host_memory_gb is None
    else:
        assert line.startswith("host_memory_gb: ") and "#" in line and "(" in line.split("#", 1)[1]


@pytest.mark.parametrize("preset, gib", [
    ("dgx-a100", 2048), ("dgx-a100-40gb", 1024), ("dgx-h100", 2048), ("dgx-h200", 2048),
    ("dgx-b200", 2048), ("dgx-b300", 2048), ("dgx1-v100", 512), ("dgx2-v100", 1536), ("aws-p5", 2048),
    ("aws-p4d", 1152), ("gcp-a3-mega", 1872), ("hgx-h800", None), ("gb200-nvl72", None),
    ("gb300-nvl72", None),
])
def test_vendor_host_memory_of_the_presets(preset, gib):
    assert load_topology(preset).node.host_memory_gb == gib


def test_a_figure_the_file_marks_unknown_is_recorded(tmp_path):
    """NodeType.unknown: the key paths whose line's comment carries [UNKNOWN] (the presets'
    word for a stand-in figure), so an output leaning on one can say so (strategies.ps)."""
    assert parse_node_type(SMALL_PCIE).unknown == ()
    marked = SMALL_PCIE.replace("cpu_link_gbps: 10", "cpu_link_gbps: 10   # [UNKNOWN] a stand-in")
    assert parse_node_type(marked).unknown == ("fabric.cpu_link_gbps",)
    # an [ASSUMPTION] is not an unknown, and a mark outside the comment is no mark
    assert parse_node_type(SMALL_PCIE.replace("cpu_link_gbps: 10", "cpu_link_gbps: 10  # [ASSUMPTION]")).unknown == ()
    path = tmp_path / "marked.yaml"
    path.write_text(marked)
    assert load_topology(f"{path}:1x4").node.unknown == ("fabric.cpu_link_gbps",)
    # the Grace presets say their socket link is NCCL's ARM_BW stand-in; dgx-h100's is published
    for preset in ("gb200-nvl72", "gb300-nvl72", "alps-gh200"):
        assert "fabric.cpu_link_gbps" in load_topology(preset).node.unknown
    assert "fabric.cpu_link_gbps" not in load_topology("dgx-h100").node.unknown
    # the record is no part of a node's equality with itself read another way
    assert parse_node_type(marked).fabric == parse_node_type(SMALL_PCIE).fabric

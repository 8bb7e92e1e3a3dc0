import pytest

from embsim.errors import InputError
from embsim.topology import DEFAULT_PRESET, TopologyError, load_topology

from topology_samples import LOCAL_CPU, SMALL_PCIE, write_yaml  # noqa: F401 (fixture)


def test_nxg_uses_default_preset():
    t = load_topology("2x8")
    assert (t.preset, t.n_nodes, t.gpus_per_node, t.n_gpus) == (DEFAULT_PRESET, 2, 8, 16)


def test_partial_node_keeps_only_nics_of_used_gpus():
    t = load_topology("4x2")
    assert (t.n_nodes, t.gpus_per_node, t.rails) == (4, 2, (0, 1))
    assert t.summary()["nics"]["in_use"] == 2


def test_preset_with_and_without_shape():
    t = load_topology("dgx-a100:3x8")
    assert (t.preset, t.n_nodes, t.n_gpus) == ("dgx-a100", 3, 24)
    t = load_topology("dgx-b200")
    assert (t.preset, t.n_nodes, t.gpus_per_node) == ("dgx-b200", 1, 8)


def test_yaml_path_with_and_without_shape(write_yaml):
    path = write_yaml(SMALL_PCIE)
    t = load_topology(str(path))
    assert (t.preset, t.n_nodes, t.gpus_per_node) == ("small", 1, 4)
    t = load_topology(f"{path}:3x4")
    assert (t.n_nodes, t.n_gpus) == (3, 12)


def test_env_path_finds_and_shadows_presets(tmp_path, monkeypatch):
    (tmp_path / "mybox.yaml").write_text(SMALL_PCIE.replace("name: small", "name: mybox"))
    (tmp_path / "dgx-h100.yaml").write_text(SMALL_PCIE.replace("name: small", "name: dgx-h100"))
    monkeypatch.setenv("EMBSIM_TOPOLOGY_PATH", str(tmp_path))
    assert load_topology("mybox:2x4").n_gpus == 8
    assert load_topology("2x4").node.gpu.model == "test-gpu"  # user dir comes first


def test_env_path_that_is_not_a_folder_is_refused(tmp_path, monkeypatch):
    """A mistyped EMBSIM_TOPOLOGY_PATH would silently fall back to the packaged preset."""
    monkeypatch.setenv("EMBSIM_TOPOLOGY_PATH", str(tmp_path / "missing"))
    with pytest.raises(TopologyError, match=r"EMBSIM_TOPOLOGY_PATH: .*missing: not a folder$"):
        load_topology("dgx-h100:1x8")
    (tmp_path / "f.yaml").write_text("x: 1\n")
    monkeypatch.setenv("EMBSIM_TOPOLOGY_PATH", str(tmp_path / "f.yaml"))
    with pytest.raises(TopologyError, match="a file: give the folder that holds it"):
        load_topology("dgx-h100:1x8")


def test_host_fabric_cpu_device(write_yaml):
    t = load_topology(str(write_yaml(LOCAL_CPU)))
    assert (t.node.gpu.arch, t.node.gpu.model, t.node.fabric.kind, t.node.nics.count) == (0, "cpu", "host", 0)
    route = [t.links[i] for i in t.route(0, 3)]
    assert [(l.src, l.dst, l.kind) for l in route] == [("n0.gpu0", "n0.host", "host"), ("n0.host", "n0.gpu3", "host")]
    assert route[0].bandwidth == 5e9 and route[0].latency == pytest.approx(20e-6)
    with pytest.raises(TopologyError, match="no NICs"):
        load_topology(f"{write_yaml(LOCAL_CPU)}:2x4")


@pytest.mark.parametrize("spec, message", [
    ("0x8", r"'0x8'.*>= 1"),
    ("16x9", r"'16x9'.*8 GPUs per node, cannot use 9"),
    ("dgx-h100:2x", r"'dgx-h100:2x'.*not NxG"),
    ("nope", r"unknown preset 'nope' \(available: .*dgx-h100"),
    ("nope:2x8", r"unknown preset 'nope'"),
    ("", r"empty"),
    ("missing/box.yaml", r"no such file"),
    ("pcie-rtx3090:1x12", r"8 GPUs per node, cannot use 12"),
])
def test_bad_spec_strings(spec, message):
    with pytest.raises(TopologyError, match=message) as info:
        load_topology(spec)
    assert isinstance(info.value, InputError)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("text", ["dgx-h100:1x8x2", "1x8x2", "dgx-h100:x8"])
def test_a_malformed_shape_is_refused_as_a_shape_not_a_preset(text):
    """'dgx-h100:1x8x2' was looked up as a preset name ("unknown preset 'dgx-h100:1x8x2'"):
    the shape is what is wrong (probe U, U3)."""
    from embsim.topology.clusterspec import TopologySpec
    with pytest.raises(InputError, match="is not NxG"):
        TopologySpec.parse(text)

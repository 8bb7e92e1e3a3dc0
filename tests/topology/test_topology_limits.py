"""Every number of a topology file is finite and inside a stated physical range, and a
cluster too large to simulate is refused up front, in one line naming key and line."""

import time

import pytest

from embsim.topology import TopologyError, load_topology

from topology_samples import SMALL_PCIE, write_yaml  # noqa: F401 (fixture)

H100 = "topologies/dgx-h100.yaml"


@pytest.mark.parametrize("old, new, key", [
    ("bf16_tflops: 100", "bf16_tflops: .nan", "gpu.bf16_tflops"),
    ("hbm_gbps: 1000", "hbm_gbps: .inf", "gpu.hbm_gbps"),
    ("hbm_gbps: 1000", "hbm_gbps: 1.0e+300", "gpu.hbm_gbps"),
    ("count: 4", "count: 100000", "gpu.count"),
])
def test_nonsense_numbers_refused(write_yaml, old, new, key):
    assert old in SMALL_PCIE
    path = write_yaml(SMALL_PCIE.replace(old, new))
    with pytest.raises(TopologyError) as info:
        load_topology(str(path))
    msg = str(info.value)
    assert key in msg and "(line " in msg and "\n" not in msg


@pytest.mark.parametrize("replace, key", [
    (("gbit: 400", "gbit: 1000000000000000000000000000000"), "nics.gbit"),
    (("nodes_per_leaf: 32", "spines: 10000000"), "network.spines"),
])
def test_preset_mutations(tmp_path, replace, key):
    from pathlib import Path
    text = (Path(__file__).resolve().parents[2] / H100).read_text()
    assert replace[0] in text
    path = tmp_path / "n.yaml"
    path.write_text(text.replace(replace[0], replace[1] if "spines" not in replace[1]
                                 else replace[0] + "\n  " + replace[1]))
    with pytest.raises(TopologyError, match=key.replace(".", r"\.")):
        load_topology(str(path))


@pytest.mark.parametrize("spec", ["100000x8", "16385x1", "9" * 40 + "x8", "1x0"])
def test_cluster_shapes_beyond_limits(spec):
    t0 = time.perf_counter()
    with pytest.raises(TopologyError):
        load_topology(spec)
    assert time.perf_counter() - t0 < 5

"""A platform's NCCL profile in the topology file (nics.nccl_algo, nics.nccl_proto,
nics.nccl_env) holds on every run on that system unless the run sets its own."""

from pathlib import Path

import pytest

from embsim.collectives import CollectiveModel
from embsim.collectives.nccl_env import NcclEnv
from embsim.topology import TopologyError, load_topology

ROOT = Path(__file__).resolve().parents[2]


def test_a3_mega_runs_googles_tcpxo_profile():
    # The profile every A3 Mega recipe sources: Ring/Tree, Simple, 8 MiB buffers. Without it
    # the preset ran LL/LL128 over TCPXO, 2-4x fast below 256 MiB against a raw A3 Mega log.
    model = CollectiveModel(load_topology("gcp-a3-mega:2x8"))
    plan = model.plan("all_reduce", 16 << 20, range(16))
    assert plan.proto == "Simple" and plan.algo in ("Ring", "Tree")
    assert model.consts.buff_bytes["Simple"] == 8 << 20
    assert "nics.nccl_algo" in model.plugin_proto_note


def test_the_runs_own_settings_replace_the_profiles():
    topo = load_topology("gcp-a3-mega:2x8")
    model = CollectiveModel(topo, algo="NVLSTree", proto="LL128",
                            nccl_env=NcclEnv((("NCCL_BUFFSIZE", 4 << 20),)))
    assert model.algos == frozenset({"NVLSTree"}) and model.protos == frozenset({"LL128"})
    assert model.consts.buff_bytes["Simple"] == 4 << 20
    assert "NCCL_ALGO" not in model.plugin_proto_note       # the profile's other names still hold
    assert "NCCL_P2P_NET_CHUNKSIZE=524288" in model.plugin_proto_note


@pytest.mark.parametrize("line, key", [("  nccl_algo: Rnig\n", "nccl_algo"),
                                       ("  nccl_env: {NCCL_BUFSIZE: 8388608}\n", "nccl_env"),
                                       ("  nccl_env: {NCCL_BUFFSIZE: 8M}\n", "nccl_env")])
def test_a_bad_profile_is_refused_naming_its_key(tmp_path, line, key):
    text = (ROOT / "topologies" / "l40s-roce.yaml").read_text()
    anchor = "  gbit: 400"
    path = tmp_path / "bad.yaml"
    path.write_text(text.replace(anchor, line + anchor, 1).replace("name: l40s-roce", "name: bad"))
    with pytest.raises(TopologyError, match=rf"nics\.{key}"):
        load_topology(str(path))

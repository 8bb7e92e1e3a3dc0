"""A user's topology file for a shipped GPU without its measured fractions: the output says
which preset has them (probe P: the file ran 7.6 % slower than dgx-a100 and only said "no
data"); a preset that gives them itself is not pointed elsewhere."""

from pathlib import Path

from embsim.cli import main
from embsim.topology import load_topology
from embsim.topology.measured_gpus import preset_with_measurements

PRESET = Path(__file__).resolve().parents[2] / "topologies" / "dgx-a100.yaml"


def own_a100_file(tmp_path) -> Path:
    lines = PRESET.read_text().splitlines()
    keep, skipping = [], False
    for line in lines:
        if line.startswith("name:"):
            line = "name: my-a100-box"
        if line.startswith(("  gemm_fraction:", "  hbm_fraction:")):
            continue
        if line.startswith("  gemm_fractions:"):
            skipping = True
            continue
        if skipping and line.startswith("    "):
            continue
        skipping = False
        keep.append(line)
    path = tmp_path / "my-a100-box.yaml"
    path.write_text("\n".join(keep) + "\n")
    return path


def test_a_file_without_the_fractions_is_pointed_at_a_preset_that_has_them(tmp_path, capsys):
    mine = load_topology(str(own_a100_file(tmp_path)))
    name = preset_with_measurements(mine.node.gpu, own_preset=mine.preset)
    assert name is not None and load_topology(name).node.gpu.model == "A100-SXM4-80GB"
    assert load_topology(name).node.gpu.gemm_fraction
    rc = main(["simulate", "--topology", f"{own_a100_file(tmp_path)}:1x2", "--model", "gpt2",
               "--iterations", "2", "--json"])
    assert rc == 0 and f"preset {name} has measured figures for A100-SXM4-80GB" in capsys.readouterr().out


def test_a_preset_with_its_own_figures_is_not_pointed_elsewhere():
    topo = load_topology("dgx-a100")
    assert preset_with_measurements(topo.node.gpu, own_preset=topo.preset) is None

"""What a wheel ships: every code folder is a package, presets and data files included."""

from pathlib import Path

from setuptools import find_packages

ROOT = Path(__file__).resolve().parent.parent


def test_every_code_folder_is_a_package():
    found = set(find_packages(str(ROOT), include=["embsim", "embsim.*"]))
    for top in ("embsim",):
        for folder in [ROOT / top, *(p for p in (ROOT / top).rglob("*") if p.is_dir())]:
            if folder.name == "__pycache__" or not any(folder.glob("*.py")):
                continue
            name = ".".join(folder.relative_to(ROOT).parts)
            assert name in found, f"{folder} has Python files but no __init__.py: a wheel would drop it"


def test_setup_cfg_ships_presets_and_data():
    cfg = (ROOT / "setup.cfg").read_text()
    assert "share/embsim/topologies = topologies/*.yaml" in cfg
    assert "workload/zoo/*.yaml" in cfg and "validation_data/*.yaml" in cfg

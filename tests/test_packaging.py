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


def test_wheel_builds_quietly_with_its_data(tmp_path):
    """No setuptools warning (data folders declared as packages), and the YAML ships."""
    import shutil
    import subprocess
    import sys
    import zipfile
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".venv", ".git", "build", "*.egg-info",
                                                             "__pycache__", "sweeps"))
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                           "-w", str(tmp_path / "dist"), str(src)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    log = proc.stdout + proc.stderr
    # setuptools' own warnings (pip's about its index configuration are not the package's)
    for word in ("BuildBackendWarning", "SetuptoolsDeprecationWarning", "absent from the"):
        assert word not in log, log[-2000:]
    (wheel,) = (tmp_path / "dist").glob("embsim-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "embsim/workload/zoo/tiny-lm.yaml" in names
    assert any(n.endswith("validation_data/single-points.yaml") for n in names)
    assert any(n.endswith("share/embsim/topologies/dgx-h100.yaml") for n in names)
    assert "embsim/validate/collective_notes.md" in names     # docs.py's prose

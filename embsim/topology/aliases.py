"""Other names people give the systems the presets describe, and suggestions for typos.

An 8-GPU HGX baseboard is the same GPUs, NVLinks and NVSwitches whichever vendor builds the
server around it (device_names.py reads a log's device name the same way), so `hgx-h100`
is `dgx-h100` inside the node; what differs by server (NICs, host CPUs) is the preset's,
and the note every output carries says so. Instance names (`p5.48xlarge`) name one cloud
shape exactly. Nothing here guesses: a name that is neither a preset nor listed below is
refused, with the nearest preset names offered.
"""

from __future__ import annotations

from ..suggest import nearest, normalise

_HGX = ("the same 8-GPU HGX baseboard (GPUs, NVLink, NVSwitch); across nodes the preset's "
        "NICs and host stand in for the server's")

# alias -> (preset, why the two are the same system)
ALIASES: dict[str, tuple[str, str]] = {
    "hgx-a100": ("dgx-a100", _HGX),
    "hgx-a100-80gb": ("dgx-a100", _HGX),
    "dgx-a100-80gb": ("dgx-a100", "DGX A100 640GB: the 80GB-GPU DGX A100"),
    "hgx-a100-40gb": ("dgx-a100-40gb", _HGX),
    "hgx-h100": ("dgx-h100", _HGX),
    "hgx-h200": ("dgx-h200", _HGX),
    "hgx-b200": ("dgx-b200", _HGX),
    "hgx-b300": ("dgx-b300", _HGX),
    "dgx-h800": ("hgx-h800", _HGX),
    "dgx-a800": ("hgx-a800", _HGX),
    "dgx-h20": ("hgx-h20", _HGX),
    "dgx1": ("dgx1-v100", "DGX-1 with V100: the hybrid cube-mesh board"),
    "dgx-1": ("dgx1-v100", "DGX-1 with V100: the hybrid cube-mesh board"),
    "dgx-1-v100": ("dgx1-v100", "DGX-1 with V100: the hybrid cube-mesh board"),
    "dgx2": ("dgx2-v100", "DGX-2: 16x V100 SXM3 on 12 NVSwitch"),
    "dgx-2": ("dgx2-v100", "DGX-2: 16x V100 SXM3 on 12 NVSwitch"),
    "dgx-2-v100": ("dgx2-v100", "DGX-2: 16x V100 SXM3 on 12 NVSwitch"),
    "dgx2h": ("dgx2h-v100", "DGX-2H: the DGX-2 with 450 W V100s"),
    "dgx-2h": ("dgx2h-v100", "DGX-2H: the DGX-2 with 450 W V100s"),
    "dgx-2h-v100": ("dgx2h-v100", "DGX-2H: the DGX-2 with 450 W V100s"),
    "p5": ("aws-p5", "AWS's instance name"),
    "p5.48xlarge": ("aws-p5", "AWS's instance name"),
    "aws-p5.48xlarge": ("aws-p5", "AWS's instance name"),
    "p4d": ("aws-p4d", "AWS's instance name"),
    "p4d.24xlarge": ("aws-p4d", "AWS's instance name"),
    "p4de": ("aws-p4de", "AWS's instance name"),
    "p4de.24xlarge": ("aws-p4de", "AWS's instance name"),
    "g5": ("aws-g5", "AWS's instance family (the preset is its 8-GPU size)"),
    "g5.48xlarge": ("aws-g5", "AWS's instance name"),
    "p6-b200": ("aws-p6-b200", "AWS's instance family"),
    "p6-b200.48xlarge": ("aws-p6-b200", "AWS's instance name"),
    "aws-p6": ("aws-p6-b200", "AWS's B200 instance (p6-b200.48xlarge)"),
    "a3-mega": ("gcp-a3-mega", "GCP's machine family"),
    "a3-megagpu-8g": ("gcp-a3-mega", "GCP's machine type"),
    "gcp-a3mega": ("gcp-a3-mega", "GCP's machine family"),
    "nvl72": ("gb200-nvl72", "the GB200 NVL72 rack"),
    "gb200": ("gb200-nvl72", "the GB200 NVL72 rack"),
    "gb300": ("gb300-nvl72", "the GB300 NVL72 rack"),
    "dgx-gb300": ("gb300-nvl72", "NVIDIA's DGX GB300: the GB300 NVL72 rack"),
    # Not aliased: AWS p6-b300 (8x B300, but 16x 400 Gb/s EFA v4, not DGX B300's 8x 800 Gb/s CX-8),
    # Azure ND GB300 v6 and GCP's GB300 machine types (4-GPU VMs, not the 72-GPU rack), and a bare
    # "b300" (the part of both dgx-b300 and gb300-nvl72, as "h100" is of several presets)
}


def resolve(name: str, presets: list[str]) -> tuple[str, str] | None:
    """(preset, note) for a name that is not itself a preset file, or None. A spelling
    variant of a preset (case, underscores) resolves to it with a note of its own."""
    key = normalise(name)
    if key in presets:
        return key, f"preset {name!r} read as {key}"
    if key in ALIASES:
        preset, why = ALIASES[key]
        if preset in presets:
            return preset, f"preset {name!r} read as {preset}: {why}"
    return None


def suggestions(name: str, presets: list[str], limit: int = 3) -> list[str]:
    """The presets nearest to a mistyped name (an alias counts as its preset)."""
    return nearest(name, presets, {a: p for a, (p, _) in ALIASES.items()}, limit)

"""Which packaged preset a CUDA device name stands for, when a log names no system.

nccl-tests prints each rank's device name (`#  Rank 0 ... device 0 [0x1b] NVIDIA H100 80GB
HBM3`). For the SXM parts of NVIDIA's 8-GPU baseboards the name fixes the node: the
HGX/DGX board wires every GPU to the NVSwitches (or, for V100 SXM2, the DGX-1 hybrid
cube-mesh) the same way in every server built on it, and these presets describe that
board. A PCIe card names no layout (switches, bridges, sockets differ by server), and
neither does a GH200 or L40S node, nor a GB200 tray (which trays share an NVLink domain
is the rack's wiring, not the device's), so those are not guessed: the caller must name
the system. Across nodes the preset's network stands in for the log's, which the log cannot
name; `InferredSystem.note` says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ..errors import InputError

# (device-name pattern, preset, the board the name implies). First match wins; the PCIe
# and NVL variants of each part are excluded by the patterns, not by order.
_BOARDS: tuple[tuple[str, str, str], ...] = (
    (r"\bA100-SXM4-80GB\b", "dgx-a100", "8x A100 SXM4 80GB HGX board, NVSwitch"),
    (r"\bA100-SXM4-40GB\b", "dgx-a100-40gb", "8x A100 SXM4 40GB HGX board, NVSwitch"),
    # A800: the A100 die with NVLink cut to 400 GB/s duplex (the export part; topologies/hgx-a800.yaml)
    (r"\bA800-SXM4-80GB\b", "hgx-a800", "8x A800 SXM4 80GB HGX board, NVSwitch (8 NVLinks per GPU)"),
    (r"\bH100 80GB HBM3\b", "dgx-h100", "8x H100 SXM5 HGX board, NVSwitch (HBM3: the SXM part)"),
    (r"\bH200\b(?!\s*NVL)", "dgx-h200", "8x H200 SXM HGX board, NVSwitch"),
    # "NVIDIA H800 NVL" (PCI id 233A, the driver table below): [INFERENCE] the export H100 NVL, a
    # PCIe card (bridged pairs), so it fixes no HGX layout, as "H800 PCIe"
    (r"\bH800\b(?!\s*(PCIe|NVL))", "hgx-h800", "8x H800 SXM5 HGX board, NVSwitch (8 NVLinks per GPU)"),
    # "NVIDIA H20" (PCI id 2329) and "NVIDIA H20-3e" (232C) are the names NVIDIA's driver gives
    # (NVIDIA/open-gpu-kernel-modules README.md, supported-GPU table; nvidia-smi in
    # deepseek-ai/DeepEP#17). H20 is the 96 GB HBM3 part on the 8-GPU HGX board ([ASSUMPTION] the
    # table lists no PCIe or NVL H20, as it does for H800). H20-3e (141 GB HBM3e) has a memory
    # system the preset does not describe, so the pattern stops at a hyphen or word character and
    # the caller names that system.
    (r"\bH20\b(?![-\w])", "hgx-h20", "8x H20 HGX board, NVSwitch (18 NVLinks per GPU)"),
    (r"\bB200\b", "dgx-b200", "8x B200 HGX board, NVSwitch"),
    # "NVIDIA B300 SXM6 AC" (nvidia-smi on HGX B300; topologies/dgx-b300.yaml); a GB300's
    # "NVIDIA GB300" does not match (\b before B), as a GB200's does not match B200
    (r"\bB300\b", "dgx-b300", "8x B300 SXM6 HGX board, NVSwitch"),
    (r"\bV100-SXM2-(16|32)GB\b", "dgx1-v100", "8x V100 SXM2 DGX-1 board, hybrid cube-mesh"),
    # V100 SXM3 is the DGX-2's module; the DGX-2H's 450 W part reports "Tesla V100-SXM3-32GB-H"
    # ([ASSUMPTION] the name the DGX-2H's driver gives; the suffix is checked first)
    (r"\bV100-SXM3-32GB-H\b", "dgx2h-v100", "16x V100 SXM3 (450 W) DGX-2H board pair, 12 NVSwitch"),
    (r"\bV100-SXM3-32GB\b(?!-)", "dgx2-v100", "16x V100 SXM3 DGX-2 board pair, 12 NVSwitch"),
)


@dataclass(frozen=True)
class InferredSystem:
    preset: str
    device: str
    board: str
    n_nodes: int

    @property
    def note(self) -> str:
        across = (f"; across its {self.n_nodes} nodes the preset's network stands in for the "
                  f"real one" if self.n_nodes > 1 else "")
        return (f"system inferred from the log's device name {self.device!r}: preset "
                f"{self.preset} ({self.board}){across}; pass --topology to name the system")


def preset_for_device(device: str) -> tuple[str, str] | None:
    """(preset, board) for an SXM part's CUDA device name; None when the name fixes no layout."""
    for pattern, preset, board in _BOARDS:
        if re.search(pattern, device):
            return preset, board
    return None


def infer_system(devices: tuple[str, ...] | list[str], n_nodes: int) -> InferredSystem | None:
    """The preset every rank's device name points to; None when the names differ or any
    of them fixes no layout."""
    names = {d.strip() for d in devices}
    if len(names) != 1:
        return None
    device = names.pop()
    hit = preset_for_device(device)
    if hit is None:
        return None
    return InferredSystem(hit[0], device, hit[1], n_nodes)


# GPU families as CUDA device names and preset `gpu.model`s spell them: "NVIDIA H800" and
# "H800-SXM5-80GB" are one family, "NVIDIA L40S" and "L40S-48GB" another. Longer names first.
_FAMILY = re.compile(r"(GH200|GB200|B200|H200|H100|H800|H20|A100|A800|A10G|A10|A16|A30|A40|L40S|L40|L4|"
                     r"T4|V100|P100|RTX[ -]?A\d{4}|RTX[ -]?\d{4}[ -]?ADA|RTX[ -]?\d{4}(?:[ -]?TI)?|"
                     r"QUADRO[ -]RTX[ -]?\d{4})(?![A-Z0-9])")


def gpu_family(name: str) -> str | None:
    """"H800" for "NVIDIA H800" and "H800-SXM5-80GB"; None when no known family is named."""
    m = _FAMILY.search(name.upper().replace("_", "-"))
    return re.sub(r"[ -]", "", m.group(1)) if m else None


# any other part: letters then 2+ digits ("T4"-style names are in _FAMILY)
_CHIP = re.compile(r"\bcpu\b|\b([a-z]+) ?(\d{2,})")


def device_chip(name: str) -> str:
    """The chip a device name denotes, lower case, for comparing a measurement's device with
    a topology's GPU: "NVIDIA H100 80GB HBM3" and "H100-SXM5-80GB" -> "h100", "NVIDIA GeForce
    RTX 3090" and "RTX-3090" -> "rtx3090", "NVIDIA L40S" -> "l40s" (not an L40), "cpu: Xeon"
    -> "cpu"; a name of no known family by its first letters-and-digits word."""
    family = gpu_family(name)
    if family:
        return family.lower()
    text = re.sub(r"[_-]", " ", name.lower().replace("nvidia", "").replace("geforce", ""))
    m = _CHIP.search(text)
    if m is None:
        return name.lower()
    return "cpu" if m.group(1) is None else m.group(1) + m.group(2)


@lru_cache(maxsize=1)
def _preset_families() -> tuple[tuple[str, str], ...]:
    from .clusterspec import find_preset, list_presets, load_node
    out = []
    for name in list_presets():
        path = find_preset(name)
        try:
            chip = device_chip(load_node(path).gpu.model) if path else None
        except InputError:        # a broken file in a user's preset folder suggests nothing
            chip = None
        if chip and chip != "cpu":
            out.append((name, chip))
    return tuple(out)


def presets_for_device(device: str) -> list[str]:
    """The presets whose GPU is the device's chip (for a message naming what to pass), a
    PCIe card's PCIe presets first."""
    chip = device_chip(device)
    same = [name for name, fam in _preset_families() if fam == chip]
    pcie = "PCIE" in device.upper()
    return sorted(same, key=lambda name: (name.startswith("pcie-") != pcie, name))


def device_mismatch(devices, gpu_model: str) -> str | None:
    """A note when a log's device is another GPU than the topology's: another family where
    both name a known one (an A100 80GB log on the A100 40GB preset is no mismatch), else
    another chip (device_chip: a MetaX C500 or a GB10, which embsim does not know, is no
    proof of a match)."""
    want_family, want_chip = gpu_family(gpu_model), device_chip(gpu_model)
    for device in sorted({d.strip() for d in devices if d.strip()}):
        family = gpu_family(device)
        if want_family and family:
            other = family != want_family
        else:
            other = device_chip(device) != want_chip
        if other:
            unknown = "" if family else " (one embsim does not know)"
            return (f"the log's device {device!r}{unknown} is not this topology's GPU ({gpu_model}): "
                    f"the simulation is of the topology, not of the measured system")
    return None

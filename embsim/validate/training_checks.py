"""What a published-throughput run says about its own figure, checked against how it is
simulated (`embsim validate --training`): a per-GPU unit against the `scale:` that must turn
embsim's all-GPU metric into it, `nodes:` against the topology, and the simulated
configuration against GPU memory. Each mistake here changed a figure silently."""

from __future__ import annotations

import math
import re

from ..report.units import human_bytes
from ..yamlio import YamlDoc

# "tokens/s/GPU", "Tokens / sec / GPU", "samples/s per GPU", "per-GPU": the unit is per GPU
_PER_GPU = re.compile(r"/\s*gpus?\b|\bper[\s-]*gpus?\b", re.IGNORECASE)
# DGX-2's 16: the most GPUs of any one server among the presets. A topology node of more is
# a rack's NVLink domain (gb200-nvl72: 72), whose compute trays a source counts as nodes.
SERVER_GPUS_MAX = 16


def is_per_gpu(unit: str) -> bool:
    return bool(_PER_GPU.search(unit))


def check_unit_scale(doc: YamlDoc, i: int, rid: str, unit: str, gpus: int, metric: str,
                     merged: dict) -> None:
    """A per-GPU unit on several GPUs needs a `scale:` (embsim's metric is summed over all
    GPUs): without one the total was compared with the per-GPU figure, gpus times off."""
    if is_per_gpu(unit) and gpus > 1 and "scale" not in merged:
        raise doc.error(("runs", i, "unit"), f"run {rid}: {unit!r} is per GPU, but metric {metric} "
                        f"is summed over the run's {gpus} GPUs and no scale: divides it; add "
                        f"scale: {1 / gpus!r} (1/{gpus}, times any other factor) to its embsim: block")


def check_pair_unit(doc: YamlDoc, i: int, rid: str, unit: str, gpus: int, scale: float) -> None:
    """A run in a scaling pair whose scale is exactly 1/GPUs reports a per-GPU figure: its
    unit must say so, or its efficiency would be taken as a total's (k times off)."""
    if gpus > 1 and not is_per_gpu(unit) and math.isclose(scale * gpus, 1.0, rel_tol=1e-9):
        raise doc.error(("runs", i, "unit"), f"run {rid}: scale {scale!r} is 1/{gpus} GPUs, a per-GPU "
                        f"figure, but unit {unit!r} does not say per GPU; write it per GPU "
                        f"(e.g. tokens/s/GPU) so its scaling efficiency compares per-GPU rates")


def check_nodes(doc: YamlDoc, i: int, rid: str, nodes: int | None, gpus: int, spec: str,
                topo) -> None:
    """The published node count against the topology's: an intra-node NVLink all-reduce
    standing in for a network one is a different run. Several published nodes inside one
    rack-scale NVLink domain (GB200's compute trays) are that domain's node."""
    if nodes is None or nodes == topo.n_nodes:
        return
    if topo.node.gpu.count > SERVER_GPUS_MAX and topo.n_nodes < nodes:
        return
    per = f"; {nodes} nodes of {gpus // nodes} GPUs is shape {nodes}x{gpus // nodes}" if gpus % nodes == 0 else ""
    raise doc.error(("runs", i, "nodes"), f"run {rid}: is {nodes} but topology {spec} has "
                    f"{topo.n_nodes} node{'s' if topo.n_nodes != 1 else ''}{per}")


def memory_needed(memory, batch: int | None, micro_batch_given: bool) -> float:
    """The least memory per GPU the run can need: the simulated total where the file gives
    its micro-batch (accumulate:); without it the batch may be an accumulated one (the
    shared originals' form, batch = micro-batch x accumulation), which the real run split
    into micro-batches, down to one sample's activations (activations scale with the batch)."""
    if micro_batch_given or not batch or batch <= 1:
        return float(memory.total)
    return float(memory.total - memory.activations) + memory.activations / batch


def not_fitting_text(needed: float, total: float, hbm_bytes: float) -> str:
    split = "" if needed == total else " even as micro-batches of one sample"
    return f"does not fit{split}: {human_bytes(needed)} of {human_bytes(hbm_bytes)} per GPU"


def not_fitting_summary(n: int) -> str:
    """The headline's note on runs whose simulated configuration exceeds GPU memory: they
    stay in the errors (the throughput model is still compared), but a published run fitted,
    so its mapping (parallelism, recompute, batch) or embsim's memory model is off."""
    if not n:
        return ""
    runs = "1 run does" if n == 1 else f"{n} runs do"
    return (f"; {runs} not fit in GPU memory as simulated (marked; counted above): a published "
            f"run fitted, so its mapping or embsim's memory model is off")

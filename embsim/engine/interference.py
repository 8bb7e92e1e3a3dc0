"""Compute/communication interference: how much slower compute runs while a collective
is in flight beside it (the engine runs compute at 1/(1+f) then), and where f comes from.

Overlapping a collective with compute is not free on a GPU: NCCL's kernels take SMs, L2
and HBM bandwidth from the compute kernels beside them. Lee et al., "Characterizing
Compute-Communication Overlap in GPU-Accelerated Distributed Deep Learning" (arXiv
2507.03114, abstract) measured GPT and LLaMA training on 4-GPU A100, H100, MI250 and MI210
systems: compute overlapped with communication ran on average 18.9 % slower (max 40.0 %)
than compute alone. That mean is the default f on GPU devices. The paper's other figure
(sequential execution 10.2 % slower than overlapped) is an outcome of the overlap, not a
parameter, so the collectives' own slowdown (comm_interference) keeps its default of 0.

Precedence, per factor: the flag; else the trace's own measurement on the topology it was
captured on; else the topology's fabric.interference / comm_interference; else the
published figure on a GPU device (compute only) and 0 on a CPU device (the gloo traces
measure their own).
"""

from __future__ import annotations

# arXiv 2507.03114's mean compute slowdown under overlap (see above)
PUBLISHED_INTERFERENCE = 0.189
SOURCE = "arXiv 2507.03114 mean"


def label(f: float) -> str:
    return f"compute slowed {100 * f:.1f} % while collectives run ({SOURCE})"


def resolved(cfg, measured, topo) -> tuple[dict, bool]:
    """The engine's interference factors and whether the published default is one of them."""
    on_machine = measured.interference() if measured is not None else None
    fabric = topo.node.fabric
    is_gpu = topo.node.gpu.arch > 0
    out, published = {}, False
    for key, given, i in (("interference", cfg.interference, 0),
                          ("comm_interference", cfg.comm_interference, 1)):
        if given is not None:
            out[key] = given
        elif on_machine is not None:
            out[key] = on_machine[i]
        elif getattr(fabric, key) is not None:
            out[key] = getattr(fabric, key)
        elif key == "interference" and is_gpu:
            out[key], published = PUBLISHED_INTERFERENCE, True
        else:
            out[key] = 0.0
    return out, published

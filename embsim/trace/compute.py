"""A trace's measured compute table (`compute:`): what the kernel model needs to know
about the device calibrate ran on, measured there instead of taken from a spec sheet.

    compute:
      gemm:                 # median seconds of one (m x k) @ (k x n) per dtype and shape
        - {dtype: fp32, m: 256, n: 1024, k: 1024, median_us: 812.3}
      stream_gbps: 11.2     # copy bandwidth, (read + write) bytes / s / 1e9
      gather_gbps: 6.1      # index_select of random rows, same unit
      launch_us: 6.5        # one tiny op, dispatch to completion, back to back
      lstm: {batch: 32, hidden: 256, steps: 8, step_fwd_us: 210.0, step_bwd_us: 380.0}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..yamlio import YamlDoc, check_mapping, get

US_PER_S = 1e6
GEMM_DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")


@dataclass(frozen=True)
class GemmPoint:
    dtype: str
    m: int
    n: int
    k: int
    median_s: float

    @property
    def flops_per_s(self) -> float:
        return 2.0 * self.m * self.n * self.k / self.median_s


@dataclass(frozen=True)
class LstmStep:
    """One nn.LSTM layer (input size = hidden) run over `steps` timesteps; seconds per
    timestep, forward and backward."""
    batch: int
    hidden: int
    fwd_s: float
    bwd_s: float
    steps: int = 1


@dataclass(frozen=True)
class ComputeMeasurement:
    gemm: tuple[GemmPoint, ...]
    stream_gbps: float
    gather_gbps: float
    launch_s: float
    lstm: LstmStep | None = None


def parse_compute(doc: YamlDoc, p: tuple, m: Any) -> ComputeMeasurement:
    check_mapping(doc, p, m, ("gemm", "stream_gbps", "gather_gbps", "launch_us"), ("lstm",))
    if not isinstance(m["gemm"], list) or not m["gemm"]:
        raise doc.error(p + ("gemm",), "must be a non-empty list of measured GEMMs")
    points = []
    for i, g in enumerate(m["gemm"]):
        q = p + ("gemm", i)
        check_mapping(doc, q, g, ("dtype", "m", "n", "k", "median_us"))
        dtype = get(doc, q, g, "dtype", str)
        if dtype not in GEMM_DTYPES:
            raise doc.error(q + ("dtype",), f"must be one of {', '.join(GEMM_DTYPES)}, got {dtype!r}")
        points.append(GemmPoint(dtype, *(get(doc, q, g, key, int, positive=True) for key in "mnk"),
                                get(doc, q, g, "median_us", float, positive=True) / US_PER_S))
    lstm = None
    if m.get("lstm") is not None:
        q = p + ("lstm",)
        check_mapping(doc, q, m["lstm"], ("batch", "hidden", "step_fwd_us", "step_bwd_us"), ("steps",))
        lm = m["lstm"]
        lstm = LstmStep(get(doc, q, lm, "batch", int, positive=True),
                        get(doc, q, lm, "hidden", int, positive=True),
                        get(doc, q, lm, "step_fwd_us", float, positive=True) / US_PER_S,
                        get(doc, q, lm, "step_bwd_us", float, positive=True) / US_PER_S,
                        get(doc, q, lm, "steps", int, default=1, positive=True))
    return ComputeMeasurement(tuple(points), get(doc, p, m, "stream_gbps", float, positive=True),
                              get(doc, p, m, "gather_gbps", float, positive=True),
                              get(doc, p, m, "launch_us", float, positive=True) / US_PER_S, lstm)


def _us(seconds: float) -> float:
    return round(float(seconds) * US_PER_S, 4)


def compute_to_dict(c: ComputeMeasurement) -> dict:
    out = {"gemm": [{"dtype": g.dtype, "m": g.m, "n": g.n, "k": g.k, "median_us": _us(g.median_s)}
                    for g in c.gemm],
           "stream_gbps": round(c.stream_gbps, 4), "gather_gbps": round(c.gather_gbps, 4),
           "launch_us": _us(c.launch_s)}
    if c.lstm is not None:
        out["lstm"] = {"batch": c.lstm.batch, "hidden": c.lstm.hidden,
                       "step_fwd_us": _us(c.lstm.fwd_s), "step_bwd_us": _us(c.lstm.bwd_s),
                       "steps": c.lstm.steps}
    return out

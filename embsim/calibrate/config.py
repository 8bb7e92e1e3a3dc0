"""What one calibration run does: the parsed command line, picklable for every rank."""

from __future__ import annotations

from dataclasses import dataclass

TOKEN_SEQ = 32                     # a token model's default sequence on a calibrating box


@dataclass(frozen=True)
class CalibrateConfig:
    model: str = "tiny-lm"
    batch: int = 8                 # per rank; layers are also timed at batch // 2
    seq: int | None = None         # None: TOKEN_SEQ, or 1 for a per-sample model (launch.resolve_seq)
    world: int = 2
    backend: str = "auto"          # auto | nccl | gloo
    quick: bool = False
    corpus: str | None = None
    out: str = "traces/local.yaml"
    # the measured machine is embedded in the trace; this also writes it as a file
    topology_out: str | None = None
    force: bool = False            # overwrite an existing --out / --topology-out
    command: str = ""
    seed: int = 0
    max_sweep_bytes: int = 64 << 20
    max_rows: int | None = None    # build every larger table with this many rows (spec.capped)
    label: str = ""

    @property
    def warmup(self) -> int:
        return 1 if self.quick else 3

    @property
    def reps(self) -> int:
        return 3 if self.quick else 10

    @property
    def step_samples(self) -> int:
        return 2 if self.quick else 10

    @property
    def batches(self) -> list[int]:
        return sorted({max(1, self.batch // 2), self.batch})

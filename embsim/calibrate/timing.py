"""Timing with a device switch: perf_counter on CPU, CUDA events on GPU.

Each sample times one call; warm-ups are run and discarded first. Median and
inter-quartile range summarise the samples (robust on a shared machine).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
import torch.distributed as dist


class Stopwatch:
    """marks() then seconds_between(): events on CUDA, host clock on CPU."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"

    def mark(self):
        if self.cuda:
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter()

    def seconds(self, marks: list) -> list[float]:
        """Durations between consecutive marks."""
        if self.cuda:
            marks[-1].synchronize()
            return [a.elapsed_time(b) / 1e3 for a, b in zip(marks, marks[1:])]
        return [b - a for a, b in zip(marks, marks[1:])]


@dataclass(frozen=True)
class Stat:
    median_s: float
    spread_s: float       # inter-quartile range
    reps: int

    @staticmethod
    def of(samples: list[float]) -> "Stat":
        a = np.asarray(samples, dtype=float)
        q1, med, q3 = np.percentile(a, [25, 50, 75])
        return Stat(float(med), float(q3 - q1), len(a))


def together() -> None:
    """Start a sample on every rank at once: a rank timed while its peers idle runs
    faster than in training, where all compute together (shared cores, caches, memory)."""
    if dist.is_available() and dist.is_initialized():
        dist.barrier()


def time_phases(step: Callable[[Stopwatch], list], device: torch.device, warmup: int,
                reps: int) -> list[Stat]:
    """Run `step(watch)` (which returns its marks) warmup + reps times, every rank
    together; one Stat per phase."""
    watch = Stopwatch(device)

    def sample():
        together()
        return watch.seconds(step(watch))
    for _ in range(warmup):
        sample()
    samples = [sample() for _ in range(reps)]
    return [Stat.of([s[i] for s in samples]) for i in range(len(samples[0]))]

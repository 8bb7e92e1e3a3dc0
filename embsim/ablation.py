"""EmbRace's 2D scheduling taken apart: one strategy under fifo, priority, embrace-2d,
and embrace-2d with each of its parts off in turn, so the contribution of each part is
visible (`embsim compare --ablation`). Every row that loses to fifo says which resource
was the bottleneck."""

from __future__ import annotations

from dataclasses import dataclass, replace

from .compare import CompareRow, combination, run_one
from .errors import InputError
from .report.compare_why import bottleneck
from .engine.options_used import OptionsUsed
from .engine.run import SimulationConfig
from .schedulers.embrace2d import SWITCHES


@dataclass(frozen=True)
class AblationResult:
    config: SimulationConfig
    strategy: str
    rows: tuple[tuple[str, CompareRow], ...]     # (label, row) in the order run
    options: tuple[OptionsUsed, ...] = ()         # each row's resolved options, in that order

    @property
    def full(self) -> CompareRow:
        return dict(self.rows)["embrace-2d"]

    @property
    def fifo(self) -> CompareRow:
        return dict(self.rows)["fifo"]

    def bottlenecks(self) -> list[str]:
        return [f"{label}: {bottleneck(r, self.fifo)}" for label, r in self.rows
                if label != "fifo" and r.refused is None and r.step_time > self.fifo.step_time * (1 + 1e-9)]

    def _times_ms(self, r: CompareRow) -> dict:
        """A run's times, and against embrace-2d's and fifo's steps (None: refused)."""
        times = {"step_time_ms": r.step_time, "exposed_comm_ms": r.exposed_comm, "compute_ms": r.compute,
                 "vs_full_2d_ms": None if r.refused else r.step_time - self.full.step_time,
                 "vs_fifo_ms": None if r.refused else r.step_time - self.fifo.step_time}
        return {k: None if r.refused or v is None else v * 1e3 for k, v in times.items()}

    def as_json(self) -> dict:
        return {"strategy": self.strategy, "compute_source": self.full.compute_source,
                "rows": [{"run": label, "refused": r.refused, **self._times_ms(r),
                          # each run's options (its part switched off) and where each came from
                          "options": None if used is None else used.as_json()}
                         for (label, r), used in zip(self.rows, self.options or (None,) * len(self.rows))],
                "bottlenecks": self.bottlenecks()}


def ablation_configs(cfg: SimulationConfig, strategy: str, options=None) -> list[tuple[str, SimulationConfig]]:
    base = replace(cfg, efficiency_baseline=False)
    runs = [(x, combination(base, strategy, x, options)) for x in ("fifo", "priority", "embrace-2d")]
    two_d = runs[-1][1]
    for part in SWITCHES:
        runs.append((f"embrace-2d, {part} off",
                     replace(two_d, scheduler_options={**two_d.scheduler_options, part: "off"})))
    return runs


def ablation(cfg: SimulationConfig, strategy: str = "embrace", options=None) -> AblationResult:
    """`options`: one --option bag, routed as compare routes it (NAME.KEY for one component)."""
    rows = tuple((label, run_one(c)) for label, c in ablation_configs(cfg, strategy, options))
    refused = {label: r.refused for label, r in rows if r.refused is not None}
    for label in ("fifo", "embrace-2d"):
        if label in refused:
            # nothing to take apart or to measure against (bert-base: no sparse table left)
            raise InputError(f"--ablation: {strategy} under {label} on {cfg.model} is refused "
                             f"({refused[label]}); nothing to take apart")
    return AblationResult(config=cfg, strategy=strategy, rows=rows,
                          options=tuple(_switched(label, r.options) for label, r in rows))


def _switched(label: str, used: OptionsUsed | None) -> OptionsUsed | None:
    """A part the ablation switched off was set by --ablation, not by the user's --option
    (None: the run was refused)."""
    if used is None:
        return None
    part = label.removeprefix("embrace-2d, ").removesuffix(" off") if label.endswith(" off") else None
    return replace(used, items=tuple(replace(u, source="--ablation") if u.key == part and
                                     u.component == "scheduler" else u for u in used.items))

"""The strategy and scheduler options a run used, each with where its value came from:
the component's default, the model file's `defaults.options` (how its reference trainer
runs it, e.g. bert-large's one flat DDP bucket), the user's --option, or another option
that decides it (implied: EmbRace's exchange is fused under shard=tables). Two results made
with different options differ in their options, not only in their numbers.

Resolved once, where the simulation resolves them (engine.run.simulate carries the result
on SimulationResult.options_used): the model file's keys reach the strategy or scheduler
that declares them, an --option of the same key wins.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..schedulers import SCHEDULERS
from ..strategies import STRATEGIES
from .config import SimulationConfig

DEFAULT, MODEL_FILE, OPTION = "default", "model file", "--option"
# not given, and decided by another option rather than defaulted (EmbRace's exchange is fused
# under shard=tables): the component's Options.implied() says why
IMPLIED = "implied"


@dataclass(frozen=True)
class OptionUsed:
    component: str      # "strategy" | "scheduler"
    key: str
    value: Any          # as the component holds it (checked and converted)
    source: str         # DEFAULT | MODEL_FILE | OPTION | IMPLIED
    why: str = ""       # IMPLIED: the option that decides it ("shard=tables always fuses")

    @property
    def origin(self) -> str:
        """Where the value came from, in words: the source, or why it is implied."""
        return self.why if self.source == IMPLIED else self.source


@dataclass(frozen=True)
class OptionsUsed:
    """The options of one run's strategy and scheduler (a component without options has none)."""

    strategy: str
    scheduler: str
    items: tuple[OptionUsed, ...] = ()

    def text(self, component: str) -> str:
        """'fifo: bucket_bytes=1e+12, ddp=torch-view (model file); message_size=10000000
        (default)': one component's options grouped by where they came from."""
        mine = [u for u in self.items if u.component == component]
        groups = []
        for origin in dict.fromkeys([OPTION, MODEL_FILE, DEFAULT, *(u.origin for u in mine)]):
            keys = [f"{u.key}={value_text(u.value)}" for u in mine if u.origin == origin]
            if keys:
                groups.append(f"{', '.join(keys)} ({origin})")
        return f"{getattr(self, component)}: {'; '.join(groups) if groups else 'no options'}"

    def as_json(self) -> dict:
        """{"strategy": {"name": N, "options": {KEY: {"value": V, "from": SOURCE}}}, "scheduler": ...};
        an implied value also says why ("why": "shard=tables always fuses")."""
        return {component: {"name": getattr(self, component),
                            "options": {u.key: {"value": u.value, "from": u.source,
                                                **({"why": u.why} if u.source == IMPLIED else {})}
                                        for u in self.items if u.component == component}}
                for component in ("strategy", "scheduler")}


def options_used(given: SimulationConfig, merged: SimulationConfig) -> OptionsUsed:
    """Every option of the run's strategy and scheduler as it resolved them. `given`: the
    config as asked, its strategy_options/scheduler_options the --option values only;
    `merged`: the same with the model's defaults merged in (engine.run.with_model_defaults)."""
    items = []
    for component, registry, name, asked, resolved in (
            ("strategy", STRATEGIES, given.strategy, given.strategy_options, merged.strategy_options),
            ("scheduler", SCHEDULERS, given.scheduler, given.scheduler_options, merged.scheduler_options)):
        options = registry.get(name).from_options(resolved).options
        implied = options.implied() if hasattr(options, "implied") else {}
        for field in dataclasses.fields(options):
            source = OPTION if field.name in asked else MODEL_FILE if field.name in resolved else DEFAULT
            why = implied.get(field.name, "") if source == DEFAULT else ""
            items.append(OptionUsed(component, field.name, getattr(options, field.name),
                                    IMPLIED if why else source, why))
    return OptionsUsed(given.strategy, given.scheduler, tuple(items))


def value_text(value: Any) -> str:
    """As one would type it after --option KEY=: on/off, whole numbers without '.0'."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if value is None:
        return "unset"
    if isinstance(value, float):
        return f"{value:.10g}"
    return str(value)

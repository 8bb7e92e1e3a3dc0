"""What the page's judging words rest on: the model's resolution (a gap below the simulator's
mean training error is "not resolved by the model") and `need`, which stops the run, naming
the condition, where the data no longer support a word the page prints."""

from __future__ import annotations

from embsim.compare import TRAINING_MEAN_ERROR

RESOLUTION = TRAINING_MEAN_ERROR
RES = f"{RESOLUTION * 100:.1f} %"


class ClaimChanged(RuntimeError):
    """A judging word the page prints no longer holds for the data: rewrite the sentence."""


def need(cond: bool, what: str) -> None:
    if not cond:
        raise ClaimChanged(f"docs/results.md's wording assumes {what}; the data no longer say so: "
                           "rewrite the sentence in benchmarks/claims/")


def resolved_word(gap: float) -> str:
    return "resolved by the model" if gap >= RESOLUTION else "not resolved by the model"

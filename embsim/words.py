"""Counted nouns for output text: "1 GPU", "16 GPUs"."""

from __future__ import annotations


def counted(n: float, noun: str, plural: str | None = None) -> str:
    """`n` and `noun`, the noun plural unless n is exactly one (thousands separated)."""
    word = noun if n == 1 else (plural or noun + "s")
    return f"{n:,} {word}" if isinstance(n, int) else f"{n:,g} {word}"

"""What the `list` and `show` subcommands (`embsim model`, `embsim topology`) share: one line
per name with its description's first sentence, and a summary printed as text or JSON."""

from __future__ import annotations

import json
import re
from typing import Callable, Iterable

import click

# a sentence ends at a full stop followed by a capital, except after an abbreviation the
# zoo's citations use ("Devlin et al. 2019", "Wang et al. OSDI", "e.g. BERT")
_SENTENCE_END = re.compile(r"(?<!\bal)(?<!\be\.g)(?<!\bi\.e)(?<!\bvs)(?<!\bcf)(?<!\bFig)(?<!\bNo)\.\s+(?=[A-Z])")


def first_sentence(text: str) -> str:
    """A file's description or source folded to one line and cut after its first sentence."""
    line = " ".join(text.split())
    end = _SENTENCE_END.search(line)
    return line[:end.start() + 1] if end else line


def echo_listing(rows: Iterable[tuple[str, str]], footer: str) -> None:
    """`NAME  first sentence of its description`, names aligned, then `footer` on stderr
    (where the names are looked up), so stdout stays one line per name."""
    rows = list(rows)
    width = max((len(name) for name, _ in rows), default=0)
    for name, description in rows:
        click.echo(f"{name:<{width}}  {first_sentence(description)}")
    click.echo(f"# {footer}", err=True)


def echo_summary(summary: dict, as_json: bool, print_text: Callable[[dict], None]) -> None:
    """A `show` subcommand's summary: JSON with --json, else its text form."""
    if as_json:
        click.echo(json.dumps(summary, indent=2))
    else:
        print_text(summary)


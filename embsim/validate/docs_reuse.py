"""Reusing docs/validation.md's training tables for `python -m embsim.validate.docs --refresh`.

A full regeneration simulates every packaged and held-out training file (about 40 minutes on
two cores, most of it the pipeline-parallel LLM rows). A change that moves only some files'
runs (a new held-out file, a re-mapped row) needs only their sections recomputed: --refresh
names those files, and every other section keeps the table the previous generation wrote.
The prose around each table is always regenerated from the code. After a change to the model
itself every table may move: regenerate in full.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

TABLE_HEAD = "| file | run | GPUs | measured |"
# the lines training_table writes after its runs and pairs tables
SUMMARY_STARTS = ("mean |error|", "no simulated runs")
TRAILER_STARTS = ("not simulated:", "compute times:")


def previous_tables(text: str) -> dict[str, str]:
    """Each training section's table in a generated docs/validation.md, by section title
    (the text after '## '). Sections without a training table are left out."""
    tables: dict[str, str] = {}
    title, lines = None, []
    for line in text.splitlines() + ["## "]:          # a sentinel heading closes the last one
        if line.startswith("## "):
            if title is not None and (table := _table_in(lines)) is not None:
                tables[title] = table
            title, lines = line[3:], []
        else:
            lines.append(line)
    return tables


def _table_in(lines: list[str]) -> str | None:
    start = next((i for i, l in enumerate(lines) if l.startswith(TABLE_HEAD)), None)
    if start is None:
        return None
    end = next((i for i in range(start, len(lines)) if lines[i].startswith(SUMMARY_STARTS)), None)
    if end is None:
        return None
    end += 1
    while end < len(lines) and lines[end].startswith(TRAILER_STARTS):
        end += 1
    return "\n".join(lines[start:end])


@dataclass(frozen=True)
class TableReuse:
    """Which sections are recomputed (those holding a file in `refresh`) and the tables the
    others keep (`previous`, from previous_tables)."""
    previous: dict[str, str]
    refresh: frozenset[Path]

    @classmethod
    def from_doc(cls, doc: Path, refresh: list[str]) -> "TableReuse":
        return cls(previous_tables(doc.read_text(encoding="utf-8")),
                   frozenset(Path(f).resolve() for f in refresh))

    def table(self, title: str, files: list[str]) -> str | None:
        """The kept table of section `title` over `files`, or None when it must be computed:
        it holds a refreshed file, or the previous document has no such section."""
        if any(Path(f).resolve() in self.refresh for f in files):
            return None
        return self.previous.get(title)

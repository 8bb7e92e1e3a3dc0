"""Notes for people: a strategy that notes every embedding table of a 26-table recommender
prints a hundred alike lines under the table, and the why of the ranking drowns in them.

Notes that differ only in their numbers (table names included: cat_0 ... cat_25) say the
same thing table by table (embsim.strategies ps, embrace, s2reducer; the embrace-2d
scheduler). Past `threshold` of them, the first `keep` stay as written and one line counts
the rest and names the first and last table they are about. Every other note is printed
as it is. `--notes all` prints every note, and `--json` carries every note.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
# the thing a per-table note is about: the first word with a digit after the note's first
IDENT = re.compile(r"[A-Za-z_][\w.-]*\d[\w.-]*|\d+[A-Za-z_][\w.-]*")

KEEP = 2
THRESHOLD = 4


def alike_key(note: str) -> str:
    """The note with every number blanked: notes with one key say one thing."""
    return NUMBER.sub("#", note)


def subject(note: str) -> str:
    """What a per-table note is about (its first identifier with a digit after the
    leading word), else ''."""
    head, _, rest = _unattributed(note).partition(" ")
    m = IDENT.search(rest)
    return m.group(0).removesuffix("'s").rstrip(":.,;") if m else ""


def attributed(row, note: str) -> str:
    """A compare row's note as the table prints it: one that does not begin with its row's
    strategy (a scheduler's, such as embrace-2d's share deferred, which differs between the
    strategies it runs under) prefixed with the row it belongs to."""
    if note.split(" ", 1)[0].rstrip(":") == row.strategy:
        return note
    return f"({row.label}) {note}"


def _unattributed(note: str) -> str:
    """The note without attributed()'s "(strategy/scheduler) " prefix."""
    return note.partition(") ")[2] if note.startswith("(") else note


def condense(notes, keep: int = KEEP, threshold: int = THRESHOLD) -> list[str]:
    """`notes` without repeats and in order, each run of more than `threshold` alike
    notes cut to its first `keep` and one line that counts and names the rest. Several
    kinds of per-table note of one strategy over the same tables share one count line,
    which counts every note it stands for and sits after the last kind's kept notes."""
    notes = list(dict.fromkeys(notes))
    keys = [alike_key(n) for n in notes]
    members = defaultdict(list)
    for note, key in zip(notes, keys):
        members[key].append(note)
    out, seen = [], Counter()
    counted = {}           # (lead, span) -> [notes hidden, kinds]
    slot = {}              # (lead, span) -> its place in out
    for note, key in zip(notes, keys):
        group = members[key]
        if len(group) <= threshold:
            out.append(note)
            continue
        seen[key] += 1
        if seen[key] <= keep:
            out.append(note)
        elif seen[key] == keep + 1:
            rest = [subject(n) for n in group[keep:]]
            span = f" ({rest[0]} ... {rest[-1]})" if rest[0] and rest[-1] else ""
            row = note[:len(note) - len(_unattributed(note))]
            line = (row + _unattributed(note).split(" ", 1)[0].rstrip(":"), span)
            hidden, kinds = counted.get(line, (0, 0))
            counted[line] = (hidden + len(rest), kinds + 1)
            if line in slot:
                out[slot[line]] = None      # moved below this kind's kept notes
            slot[line] = len(out)
            out.append(line)
    return list(dict.fromkeys(x if isinstance(x, str) else _count_line(x, *counted[x])
                              for x in out if x is not None))


def _count_line(line: tuple[str, str], hidden: int, kinds: int) -> str:
    lead, span = line
    of = f", of {kinds} kinds" if kinds > 1 else ""
    return (f"{lead}: {hidden} more alike{of}{span}; "
            f"--notes all prints each, --json carries every note")

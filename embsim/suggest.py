"""The nearest known names to a mistyped one, for "did you mean" in refusals.

Two kinds of near miss: a typo (difflib's ratio), and a name whose words are all in a known
name but in another order or with some left out (h100-pcie for pcie-h100, ncf for
ncf-ml20m), which difflib scores low. The second kind comes first, fewest extra words
first. Nothing here resolves a name: callers only print what this returns.
"""

from __future__ import annotations

import difflib


def normalise(name: str) -> str:
    """Case and underscores do not make a different name: DGX_H100 is dgx-h100."""
    return name.strip().lower().replace("_", "-")


def nearest(name: str, names: list[str], aliases: dict[str, str] | None = None,
            limit: int = 3) -> list[str]:
    """Up to `limit` of `names` nearest to `name`; `aliases` maps other spellings to a name
    (an alias near the typo suggests its name)."""
    key = normalise(name)
    known = {n: n for n in names}
    known.update({a: n for a, n in (aliases or {}).items() if n in names})
    words = set(key.split("-"))
    holding = sorted((n for n in names if words <= set(n.split("-"))),
                     key=lambda n: (len(set(n.split("-")) - words), n))
    close = difflib.get_close_matches(key, list(known), n=limit * 2, cutoff=0.6)
    return list(dict.fromkeys(holding + [known[c] for c in close]))[:limit]

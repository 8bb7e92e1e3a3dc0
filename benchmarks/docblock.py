"""Generated sections of a hand-written page: the text between two HTML-comment markers
is replaced (or appended once), the rest of the page is left as written."""

from __future__ import annotations

import re
from pathlib import Path

from embsim.atomic import atomic_write_text


def replace_marked_block(page: Path, start: str, end: str, body: str) -> None:
    text = page.read_text()
    block = f"{start}\n\n{body}\n{end}"
    if start in text:
        text = re.sub(re.escape(start) + ".*?" + re.escape(end), lambda _: block, text, flags=re.S)
    else:
        text += "\n" + block + "\n"
    atomic_write_text(page, text)

"""A clone holds everything it refers to: no path into the machine that built it (the
design notes and hardware references live in docs/), and every docs/ path a text names
exists."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEXT = (".py", ".md", ".yaml", ".yml", ".cfg", ".toml", ".sh", ".txt")
SKIP = {".venv", ".git", "build", "sweeps", "__pycache__", ".pytest_cache"}
OUTSIDE = re.compile(r"\.\./shared|/work/(shared|wt|main)|shared/reference|shared/DESIGN|"
                     r"(?<![\w/])reference/[a-z-]+\.md|(?<![\w/])/home/[a-z]|(?<![\w/(])/root/")


def _files():
    for path in ROOT.rglob("*"):
        if any(part in SKIP or part.endswith(".egg-info") for part in path.relative_to(ROOT).parts):
            continue
        if path.is_file() and path.suffix in TEXT and path.name != Path(__file__).name:
            yield path


def test_no_path_outside_the_repository():
    found = []
    for path in _files():
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert not found, "\n".join(found)


def test_every_docs_path_named_exists():
    missing = []
    for path in _files():
        # a docs/ path that follows "/" is another repository's (owner/repo/docs/..., a URL)
        for ref in re.findall(r"(?<![\w/])docs/[\w./-]+\.(?:md|png|json)", path.read_text(errors="replace")):
            if not (ROOT / ref).exists():
                missing.append(f"{path.relative_to(ROOT)}: {ref}")
    assert not missing, "\n".join(missing)

"""docs/results.md: the prose that quotes figures is what benchmarks/results_claims.py computes
from the committed results JSON and validation headlines (and its few seconds-long what-if
runs), so a model change that moves them without regenerating the page fails here."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_results_page_prose_is_what_the_data_give():
    done = subprocess.run([sys.executable, "benchmarks/results_claims.py", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr

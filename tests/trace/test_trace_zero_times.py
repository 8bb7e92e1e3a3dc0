"""A measured time of 0 in a trace: a step's or a collective's median is divided by (an error
ratio, a bandwidth), so it is refused by the loader with its key and line; it raised
ZeroDivisionError in validate --trace before (a stranger's probe, 2026-12-05)."""

import re
from pathlib import Path

import pytest

from embsim.errors import InputError
from embsim.trace import load_trace

TRACE = Path(__file__).resolve().parents[2] / "traces" / "cpu-gloo-tiny-lm.yaml"


@pytest.mark.parametrize("section, key", [("steps", "median_us"), ("collectives", "median_us")])
def test_a_zero_median_is_refused_with_its_line(tmp_path, section, key):
    text = TRACE.read_text()
    start = text.index(f"\n{section}:")
    at = text.index(f"{key}:", start) + len(key) + 1
    end = text.index("\n", at)
    if text[at:end].strip():                       # a scalar: its value becomes 0
        text = text[:at] + " 0" + text[end:]
    else:                                          # a block list: its first item becomes 0
        item = text.index("- ", end) + 2
        text = text[:item] + "0" + text[text.index("\n", item):]
    path = tmp_path / "zero.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=re.escape(section) + r".*\(line \d+\): a measured time of 0"):
        load_trace(path)

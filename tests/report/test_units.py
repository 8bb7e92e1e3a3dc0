"""report/units.py: rates keep their precision when small (no "1 samples/s")."""

import pytest

from embsim.report.units import human_count, human_rate


@pytest.mark.parametrize("value, text", [
    (0.834, "0.83"), (1.2, "1.2"), (1.0, "1.0"), (0.0041, "0.0041"), (9.96, "10.0"), (12.44, "12.4"),
    (123.4, "123"), (1234.4, "1,234"), (285_405.2, "285,405"), (0.0, "0"),
])
def test_human_count(value, text):
    assert human_count(value) == text


def test_a_rate_never_prints_a_bare_one():
    assert human_rate(0.834, "samples/s") == "0.83 samples/s"
    assert human_rate(1.04, "samples/s") == "1.0 samples/s"

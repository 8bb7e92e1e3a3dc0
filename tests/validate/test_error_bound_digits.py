"""`validate --max-error / --mean-error`: the failure line prints the error and the bound
with as many digits as it takes for the bound to read as given and the two to differ
("0.0% exceeds --max-error 0.0%" said nothing)."""

from __future__ import annotations

import re

from embsim.cli import main
from embsim.commands.validate import _exceeds, _percents


def test_the_two_numbers_differ_and_the_bound_reads_as_given():
    assert _percents(0.00013, 0.0001) == ("0.013%", "0.010%")
    assert _percents(0.4647, 0.0001) == ("46.47%", "0.01%")
    assert _percents(0.12, 0.1) == ("12.0%", "10.0%")           # one decimal where it does
    assert _percents(0.1000004, 0.1) == ("10.00004%", "10.00000%")
    assert _exceeds("max", 0.00013, 0.0001) == "max |error| 0.013% exceeds --max-error 0.010%"
    assert _exceeds("mean", None, 0.05) == "mean |error| None exceeds --mean-error 5.0%"


def test_nccl_tests_failure_line(capsys):
    for flag in ("--max-error", "--mean-error"):
        assert main(["validate", "--nccl-tests", flag, "0.0001"]) == 1
        err = capsys.readouterr().err.strip().splitlines()[-1]
        m = re.search(rf"\|error\| ([0-9.]+)% exceeds {flag} ([0-9.]+)%$", err)
        assert m, err
        assert m.group(2).rstrip("0").endswith("01")            # 0.01 %, not 0.0 %
        assert m.group(1) != m.group(2)

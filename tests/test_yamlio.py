"""The one YAML reader: what it refuses, each in one line naming the file and line."""

import os
import time

import pytest

from embsim.errors import InputError
from embsim.yamlio import check_regular_file, parse_yaml, read_text

BOMB = ("a: &a [x, x, x, x, x, x, x, x, x, x]\n"
        + "".join(f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n"
                  for p, c in zip("abcdefg", "bcdefgh")))


@pytest.mark.parametrize("text, expect", [
    ("a: 1\nb: 2\na: 3\n", "a: key given twice (lines 1 and 3)"),
    ("x: &x {a: 1}\ny:\n  <<: *x\n", "(line 3): merge keys (<<) are not supported"),
    ("? [1, 2]\n: 3\n", "(line 1): a key must be a plain value"),
    ("a: &x [1, *x]\n", "recursive alias"),
    (BOMB, "an alias bomb"),
    ("a: " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
    ("".join("  " * i + f"k{i}:\n" for i in range(80)) + "  " * 80 + "v: 1\n", "nested more than 64"),
    ("---\n", "empty document"),
    ("", "empty document"),
    ("a: 1\n---\nb: 2\n", "not valid YAML"),
])
def test_refused_in_one_line(text, expect):
    t0 = time.perf_counter()
    with pytest.raises(InputError) as info:
        parse_yaml(text, "f.yaml")
    message = str(info.value)
    assert message.startswith("f.yaml") and expect in message and "\n" not in message
    assert time.perf_counter() - t0 < 10


def test_aliases_within_limits_still_work():
    doc = parse_yaml("base: &b [1, 2]\ncopy: *b\n", "f.yaml")
    assert doc.data == {"base": [1, 2], "copy": [1, 2]}


def test_only_regular_files(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        read_text(fifo)                       # would block for ever if opened
    with pytest.raises(InputError, match="a directory"):
        read_text(tmp_path)
    with pytest.raises(InputError, match="no such file"):
        read_text(tmp_path / "missing.yaml")
    big = tmp_path / "big.yaml"
    big.write_bytes(b"#" * 2048)
    with pytest.raises(InputError, match="too large"):
        check_regular_file(big, max_bytes=1024)
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"a: \xff\n")
    with pytest.raises(InputError, match="not UTF-8"):
        read_text(bad)

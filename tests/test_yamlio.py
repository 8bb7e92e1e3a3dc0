"""The one YAML reader: what it refuses, each in one line naming the file and line."""

import os
import time
from pathlib import Path

import pytest

from embsim.errors import InputError
from embsim.yamlio import check_regular_file, get, parse_yaml, read_text

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


def test_names_are_one_printable_line(tmp_path, capsys):
    # a name with a newline split every one-line error that quotes it ("evil\nsecond line has
    # 8 GPUs per node ..."): model, layer, table, topology, GPU and run names are refused
    from embsim.cli import main
    zoo = Path(__file__).resolve().parent.parent / "embsim" / "workload" / "zoo" / "tiny-lm.yaml"
    model = tmp_path / "m.yaml"
    model.write_text(zoo.read_text().replace("name: lstm,", 'name: "lstm\\nx",', 1))
    assert main(["model", "show", str(model)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "layers.1.name" in err and "printable" in err
    topo = Path(__file__).resolve().parent.parent / "topologies" / "dgx-h100.yaml"
    path = tmp_path / "t.yaml"
    path.write_text(topo.read_text().replace("name: dgx-h100", 'name: "evil\\tname"', 1))
    assert main(["topology", "show", f"{path}:1x99"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "name" in err and "printable" in err


def test_quoted_input_is_escaped_in_the_error_line(tmp_path, capsys):
    # the CLI's error boundary prints what a message quotes from the input on one line
    from embsim.cli import main
    profile = tmp_path / "p.json"
    profile.write_text('{"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "fwd:dec\\noder", '
                       '"ts": 1, "dur": 2, "tid": 1}]}')
    rc = main(["import-profile", str(profile), "--model", "tiny-lm", "--topology", "local-cpu",
               "--out", str(tmp_path / "t.yaml")])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "dec\\noder" in err, err


def test_beside_finds_a_relative_file_next_to_the_yaml_file_only_when_not_here(tmp_path, monkeypatch):
    from embsim.yamlio import beside
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "box.yaml").write_text("x: 1\n")
    source = tmp_path / "sub" / "curve.yaml"
    monkeypatch.chdir(tmp_path)
    assert beside("box.yaml", source) == str(tmp_path / "sub" / "box.yaml")
    (tmp_path / "box.yaml").write_text("x: 2\n")          # a file where embsim runs wins
    assert beside("box.yaml", source) == "box.yaml"
    assert beside("nowhere.yaml", source) == "nowhere.yaml"


@pytest.mark.parametrize("text, kind, expect", [
    ("x: 1e9\n", float, 1e9),          # PyYAML (YAML 1.1) reads these as text
    ("x: 4e-6\n", float, 4e-6),
    ("x: -2.5E+3\n", float, -2500.0),
    ("x: 2e3\n", int, 2000),
    ("x: 1.5\n", float, 1.5),
])
def test_exponent_numbers_read_as_yaml_1_2_does(text, kind, expect):
    doc = parse_yaml(text, "f.yaml")
    value = get(doc, (), doc.data, "x", kind)
    assert value == expect and type(value) is kind


@pytest.mark.parametrize("text, kind, expect", [
    ("x: 2.5e3x\n", float, "must be a number, got str '2.5e3x'"),
    ("x: 1.5e0\n", int, "must be an integer, got float 1.5"),
    ("x: 1e400\n", float, "finite"),
    ("x: 1e20\n", float, "1e+15"),
])
def test_exponent_numbers_still_checked(text, kind, expect):
    doc = parse_yaml(text, "f.yaml")
    with pytest.raises(InputError) as info:
        get(doc, (), doc.data, "x", kind)
    assert expect in str(info.value)


def test_exponent_text_stays_text_where_text_is_wanted():
    doc = parse_yaml("x: 1e9\n", "f.yaml")
    assert get(doc, (), doc.data, "x", str) == "1e9"


def test_a_gzipped_file_is_named_as_such(tmp_path):
    """A gzipped profile or YAML file read as "not UTF-8 text (byte 1)" (a stranger's probe)."""
    import gzip
    path = tmp_path / "profile.json.gz"
    path.write_bytes(gzip.compress(b'{"traceEvents": []}'))
    with pytest.raises(InputError, match="gzip-compressed; decompress it first"):
        read_text(path, "profile")
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes("x: caf\xe9\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"not UTF-8 text \(byte 6\)"):
        read_text(bad)

"""A profile whose JSON holds a number longer than Python's int digit limit (4300) raised
a bare ValueError (json.loads' int conversion is no JSONDecodeError): now one line."""

from embsim.cli import main


def test_overlong_integer_is_one_line(tmp_path, capsys):
    profile = tmp_path / "p.json"
    profile.write_text('{"traceEvents": [{"ph": "X", "name": "fwd:decoder", "ts": 1'
                       + "0" * 5000 + ', "dur": 1}]}')
    out = tmp_path / "t.yaml"
    assert main(["import-profile", str(profile), "--model", "tiny-lm", "--topology", "local-cpu",
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(profile) in err and "not valid JSON" in err
    assert not out.exists()

"""A user's folder on EMBSIM_TOPOLOGY_PATH holding a file that is not UTF-8 made
`topology list` a UnicodeDecodeError traceback, and a folder named x.yaml made
`topology show x` an AttributeError: the list skips what it cannot describe, and a folder
is no preset."""

from embsim.cli import main


def test_list_and_show_survive_odd_entries_on_the_path(tmp_path, monkeypatch, capsys):
    (tmp_path / "bin.yaml").write_bytes(b"\xff\xfe garbage")
    (tmp_path / "bomb.yaml").write_text("a: &a [1, 1]\nb: &b [*a, *a]\n" * 1)
    (tmp_path / "dir.yaml").mkdir()
    monkeypatch.setenv("EMBSIM_TOPOLOGY_PATH", str(tmp_path))
    assert main(["topology", "list"]) == 0
    out = capsys.readouterr().out
    assert "bin " in out and "dir " not in out
    assert main(["topology", "show", "dir"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "unknown preset 'dir'" in err

"""Where a run's inputs came from, in its text and JSON (probe H F1, F5, F7): the topology
file (packaged preset, $EMBSIM_TOPOLOGY_PATH, or the user's), never elided, and the token
distribution (--zipf, --corpus)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from embsim.cli import main

ROOT = Path(__file__).resolve().parents[2]
RUN = ["simulate", "--topology", "1x8", "--model", "tiny-lm", "--iterations", "2"]


def _json(capsys, *args) -> dict:
    assert main([*RUN, *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _sha(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_json_names_the_packaged_preset_portably(capsys, monkeypatch):
    monkeypatch.delenv("EMBSIM_TOPOLOGY_PATH", raising=False)
    topo = _json(capsys)["topology"]
    # relative to the package: the same bytes wherever embsim is installed
    assert topo["file"] == "topologies/dgx-h100.yaml" and topo["file_from"] == "packaged preset"
    assert topo["file_sha256"] == _sha(ROOT / "topologies" / "dgx-h100.yaml")


def test_an_override_from_embsim_topology_path_is_told_apart(capsys, monkeypatch, tmp_path):
    """F1: an $EMBSIM_TOPOLOGY_PATH preset and the packaged one gave identical topology blocks."""
    shadow = tmp_path / "dgx-h100.yaml"
    shadow.write_text((ROOT / "topologies" / "dgx-h100.yaml").read_text().replace("gbit: 400 ", "gbit: 100 "))
    monkeypatch.setenv("EMBSIM_TOPOLOGY_PATH", str(tmp_path))
    topo = _json(capsys)["topology"]
    assert (topo["file"], topo["file_from"], topo["file_sha256"]) == (
        str(shadow), "$EMBSIM_TOPOLOGY_PATH", _sha(shadow))
    assert main(RUN) == 0
    assert f"topology file: {shadow} (found in $EMBSIM_TOPOLOGY_PATH" in capsys.readouterr().out


def test_a_long_topology_path_is_printed_whole(capsys, monkeypatch, tmp_path):
    """F5: the path was cut to `my-c…` in redirected output (and at COLUMNS=50)."""
    folder = (tmp_path / "a very long directory name with spaces" / "and ünïcödé"
              / "another_quite_long_directory_name_here")
    folder.mkdir(parents=True)
    path = folder / "my-cluster.yaml"
    path.write_bytes((ROOT / "topologies" / "dgx-h100.yaml").read_bytes())
    for columns in ("80", "50"):
        monkeypatch.setenv("COLUMNS", columns)
        assert main(["simulate", "--topology", f"{path}:1x8", "--model", "tiny-lm", "--iterations", "2"]) == 0
        out = capsys.readouterr().out
        assert f"topology file: {path} (a file given by --topology or --trace)" in out.splitlines()
        assert "…" not in out
    assert main(["simulate", "--topology", f"{path}:1x8", "--model", "tiny-lm", "--iterations", "2",
                 "--json"]) == 0
    topo = json.loads(capsys.readouterr().out)["topology"]
    assert (topo["file"], topo["file_from"]) == (str(path), "file")


def test_zipf_is_recorded(capsys):
    """F7: --zipf changed the numbers and was in neither the text nor the JSON."""
    assert _json(capsys)["workload"]["zipf"] == 1.05
    w = _json(capsys, "--zipf", "2")["workload"]
    assert (w["zipf"], w["corpus"]) == (2.0, None)
    assert main([*RUN, "--zipf", "2"]) == 0
    assert "tokens Zipf s=2" in " ".join(capsys.readouterr().out.split())


def test_a_corpus_is_recorded_with_its_digest(capsys, tmp_path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat sat on the mat and the dog ran off\n" * 200)
    w = _json(capsys, "--corpus", str(corpus))["workload"]
    assert (w["zipf"], w["corpus"], w["corpus_sha256"]) == (None, str(corpus), _sha(corpus))
    assert main([*RUN, "--corpus", str(corpus)]) == 0
    out = capsys.readouterr().out
    assert f"corpus: {corpus}" in out.splitlines() and "tokens from the --corpus file" in out


def test_a_binary_corpus_is_one_line(capsys, tmp_path):
    """F7: 100 KB of random bytes was accepted as a corpus and moved the result 1 %."""
    blob = tmp_path / "bin.dat"
    blob.write_bytes(bytes(range(256)) * 64)
    assert main([*RUN, "--corpus", str(blob)]) == 2
    err = capsys.readouterr().err
    assert err == (f"embsim: error: --corpus {blob}: cannot read corpus: not a text file (a NUL "
                   f"byte at byte 0); give UTF-8 text\n")
    latin = tmp_path / "latin.txt"
    latin.write_bytes("caf\xe9 ".encode("latin-1") * 10)
    assert main([*RUN, "--corpus", str(latin)]) == 2
    assert "not UTF-8 text (byte 3)" in capsys.readouterr().err

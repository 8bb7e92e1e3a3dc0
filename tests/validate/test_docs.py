"""embsim.validate.docs (python -m embsim.validate.docs): bad arguments are refused in one
line, exit status 2, before the minutes of regeneration and without writing --out."""

from __future__ import annotations

from pathlib import Path

import pytest

from embsim.validate import docs
from embsim.validate.training import HELDOUT_DIR

LAMBDA = str(HELDOUT_DIR / "lambda-pytorch.yaml")


@pytest.mark.parametrize("argv, words", [
    (["--traces", "{tmp}/none"], "--traces {tmp}/none: not a folder of trace files"),
    (["--traces", "{tmp}"], "--traces {tmp}: not a folder of trace files"),      # no *.yaml in it
    (["--out", "{tmp}/a.md", "--out", "{tmp}/b.md"], "--out given twice"),
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["--refresh", "{tmp}/none.yaml"], "--refresh {tmp}/none.yaml: no such training file"),
    (["--refresh", LAMBDA], "--refresh needs the previous {tmp}/v.md"),    # no --out to keep tables from
])
def test_bad_arguments_are_one_line_and_write_nothing(argv, words, tmp_path, capsys):
    argv = [a.format(tmp=tmp_path) for a in argv] + ([] if "--out" in argv else ["--out", str(tmp_path / "v.md")])
    with pytest.raises(SystemExit) as exc:
        docs.main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and len(err.strip().splitlines()) == 1
    assert words.format(tmp=tmp_path) in err, err
    assert not list(tmp_path.glob("*.md")) and not list(tmp_path.glob("*.png"))


def test_the_committed_validation_md_carries_the_current_notes():
    """collective_notes.md edited without regenerating docs/validation.md fails here."""
    committed = (docs.Path(__file__).resolve().parents[2] / "docs" / "validation.md").read_text(encoding="utf-8")
    notes = "\n".join(docs.MODEL_NOTES)
    assert len(docs.MODEL_NOTES) > 100 and notes in committed


def test_every_held_out_training_file_has_a_docs_section(monkeypatch):
    """A held-out file added without a docs/validation.md section (probe R's nine were) fails
    here; the sections' files are collected without simulating them."""
    from embsim.validate import training_docs_heldout, training_docs_merlin, training_docs_probe_r
    shown = set()

    def collect(title, files, intro, notes):
        shown.update(Path(f).name for f in files)
        return []
    for module in (training_docs_heldout, training_docs_merlin, training_docs_probe_r):
        monkeypatch.setattr(module, "doc_section", collect)
    training_docs_heldout.heldout_section()
    training_docs_probe_r.probe_r_section()
    held_out = {p.name for p in HELDOUT_DIR.glob("*.yaml")}
    assert held_out - shown == set(training_docs_probe_r.PROBE_R_SLOW)

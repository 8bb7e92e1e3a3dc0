"""embsim.validate.docs_reuse (python -m embsim.validate.docs --refresh): the tables of the
sections not refreshed come back verbatim from the previous document and nothing is
simulated for them; a refreshed file's section is simulated (bad --refresh arguments:
test_docs.py)."""

from __future__ import annotations

from pathlib import Path


from embsim.validate import docs, training_docs
from embsim.validate.docs_reuse import TableReuse, previous_tables
from embsim.validate.training import ScalingPair, TrainingRun, training_table


def _table(error_sign: float = 1.0) -> str:
    run = TrainingRun(file="f", id="r", system="s", gpus=8, measured=100.0, unit="tokens/s",
                      simulated=100.0 + 5 * error_sign, compute_source="kernel model, X spec")
    skipped = TrainingRun(file="f", id="gone", system="s", gpus=8, measured=1.0, unit="tokens/s",
                          simulated=None, skipped="no preset")
    pair = ScalingPair(file="f", run="r", base="r1", gpus=8, measured=0.9, simulated=0.95)
    return training_table([run, skipped], [pair], markdown=True)


def _doc(tables: dict[str, str]) -> str:
    parts = ["# Validation", "", "## nccl-tests", "", "| curve | op |", "|---|---|", ""]
    for title, table in tables.items():
        parts += [f"## {title}", "", "intro line", "", table, "", "- a note", ""]
    return "\n".join(parts) + "\n"


def test_previous_tables_returns_each_training_table_verbatim():
    a, b = _table(1.0), _table(-1.0)
    assert "not simulated:" in a and "compute times:" in a       # the trailer lines are kept
    found = previous_tables(_doc({"Section A": a, "Section B": b}))
    assert found == {"Section A": a, "Section B": b}             # the nccl-tests table is not one


def test_a_section_holding_a_refreshed_file_is_computed(tmp_path):
    kept, fresh = tmp_path / "kept.yaml", tmp_path / "fresh.yaml"
    for f in (kept, fresh):
        f.write_text("runs: []\n")
    reuse = TableReuse({"A": "table A", "B": "table B"}, frozenset({fresh.resolve()}))
    assert reuse.table("A", [str(kept)]) == "table A"
    assert reuse.table("B", [str(kept), str(fresh)]) is None
    assert reuse.table("New section", [str(kept)]) is None       # nothing to keep: computed


def test_doc_section_keeps_the_table_without_simulating(monkeypatch):
    def no_simulation(files):
        raise AssertionError("simulated a kept section")
    monkeypatch.setattr(training_docs, "training_errors", no_simulation)
    reuse = TableReuse({"Title": "| kept table |"}, frozenset())
    with training_docs.reusing_tables(reuse):
        section = training_docs.doc_section("Title", ["x.yaml"], ["intro"], ["note"])
    assert section == ["## Title", "", "intro", "", "| kept table |", "", "note", ""]
    assert training_docs._reuse is None                          # reset after the block


def test_the_committed_document_parses_into_its_training_tables():
    """The parser reads the real document: every training section's table, none empty."""
    committed = Path(docs.__file__).resolve().parents[2] / "docs" / "validation.md"
    tables = previous_tables(committed.read_text(encoding="utf-8"))
    assert len(tables) >= 10
    assert all(t.splitlines()[-1].startswith(("mean |error|", "no simulated", "not simulated",
                                              "compute times")) for t in tables.values())

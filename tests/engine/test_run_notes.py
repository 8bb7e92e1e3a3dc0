"""engine/run_notes.py: the notes that say why a figure is what it is."""

from dataclasses import replace

from embsim.engine.run import SimulationConfig
from embsim.engine.run_notes import global_batch_note

GNMT = SimulationConfig(topology="dgx-a100:1x4", model="gnmt", batch=128, seq=24)


def test_accumulation_from_the_model_global_batch_is_said():
    (note,) = global_batch_note(replace(GNMT, accumulate=2), 128, 4)
    assert "accumulate 2" in note and "global batch 1,024" in note and "--accumulate 1" in note


def test_no_note_without_accumulation_or_when_it_is_not_the_global_batch():
    assert global_batch_note(replace(GNMT, accumulate=1), 128, 8) == ()
    assert global_batch_note(replace(GNMT, accumulate=4), 128, 4) == ()          # the user's own K
    assert global_batch_note(SimulationConfig(topology="dgx-a100:1x4", model="bert-base", batch=16, seq=128,
                                              accumulate=2), 16, 4) == ()      # no global batch in its zoo file


def test_s2reducer_under_a_per_layer_scheduler_is_said_to_be_nobodys_pairing():
    from embsim.engine.run_notes import unauthored_pairing_note
    s2 = replace(GNMT, strategy="s2reducer")
    (note,) = unauthored_pairing_note(replace(s2, scheduler="priority"))
    assert "no author ran this pairing" in note and "--scheduler fifo" in note
    assert unauthored_pairing_note(replace(s2, scheduler="fifo")) == ()
    assert unauthored_pairing_note(replace(s2, scheduler="priority", strategy_options={"sync": "overlapped"})) == ()
    assert unauthored_pairing_note(replace(GNMT, strategy="allreduce", scheduler="priority")) == ()


def _notes(**kw):
    from embsim.engine.run import SimulationConfig, simulate
    cfg = SimulationConfig(topology="dgx-a100:1x2", model="dlrm-criteo-f15", iterations=2,
                           efficiency_baseline=False, **kw)
    return [n for n in simulate(cfg).notes if "changes nothing" in n or "word frequencies" in n]


def test_flags_a_recommender_has_nothing_for_are_said(tmp_path):
    """--untie-outputs, --lengths and --corpus on a DLRM were taken without a word (probe U, B2)."""
    assert _notes() == []
    assert _notes(untie_outputs=True) == ["--untie-outputs changes nothing: dlrm-criteo-f15 ties "
                                          "no output layer to a table"]
    assert "has no sequence" in _notes(lengths="wikipedia")[0]
    corpus = tmp_path / "words.txt"
    corpus.write_text("the cat sat on the mat")
    assert "tables that are not words (categorical)" in _notes(corpus=str(corpus))[0]

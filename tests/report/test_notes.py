"""Alike per-table notes are condensed for people, every other note kept as written."""

from embsim.cli import main
from embsim.report.notes import alike_key, condense, subject


def ps_notes(n):
    return [f"ps cat_{i}: 2 colocated servers, server load max/mean {1 + i / 10:.2f}" for i in range(n)]


def test_alike_notes_differ_only_in_numbers():
    a, b = ps_notes(2)
    assert alike_key(a) == alike_key(b)
    assert alike_key(a) != alike_key("ps cat_0: the topology has no host vertex")


def test_subject_is_the_table_the_note_is_about():
    assert subject("ps cat_12: local aggregation") == "cat_12"
    assert subject("embrace shard=cols t3: hottest shard") == "t3"
    assert subject("embrace-2d: 82 % of cat_0_lookup's embedding traffic deferred") == "cat_0_lookup"
    assert subject("distopt: buckets of >= 40,000,000 elements") == ""


def test_a_long_run_keeps_two_and_counts_the_rest():
    out = condense(["first", *ps_notes(26), "last"])
    assert out[0] == "first" and out[-1] == "last"
    assert out[1:3] == ps_notes(2)
    assert out[3].startswith("ps: 24 more alike (cat_2 ... cat_25)")
    assert len(out) == 5


def test_short_runs_and_distinct_notes_are_kept_whole():
    notes = ps_notes(4) + ["fsdp: one root unit", "fsdp: one root unit"]
    assert condense(notes) == ps_notes(4) + ["fsdp: one root unit"]


def test_several_notes_per_table_give_one_count_line():
    """The one line counts every note it stands for: it said 8 for 16 hidden notes."""
    notes = []
    for i in range(10):
        notes += [f"ps cat_{i}: pushes {i * 100} rows", f"ps cat_{i}: load {i}.5"]
    out = condense(notes)
    assert out[:4] == notes[:4]
    assert out[4:] == ["ps: 16 more alike, of 2 kinds (cat_2 ... cat_9); --notes all prints each, "
                       "--json carries every note"]


def test_the_count_line_follows_every_kind_it_counts():
    """probe H M3: the count line sat between the kinds' kept notes, so the third kind's
    cat_0/cat_1 notes seemed to stand outside it."""
    a = [f"ps cat_{i}: local aggregation {i}" for i in range(6)]
    b = [f"ps cat_{i}: 2 colocated servers, load {i}.5" for i in range(6)]
    out = condense(a + b)
    assert out == a[:2] + b[:2] + ["ps: 8 more alike, of 2 kinds (cat_2 ... cat_5); --notes all "
                                   "prints each, --json carries every note"]
    # a kind over other tables keeps its own line
    c = [f"ps emb_{i}: hot rows {i}" for i in range(6)]
    assert condense(a + c)[2] == ("ps: 4 more alike (cat_2 ... cat_5); --notes all prints each, "
                                  "--json carries every note")


def test_cli_condenses_by_default_and_prints_every_note_with_notes_all(capsys):
    args = ["simulate", "--topology", "dgx-a100:2x8", "--model", "dlrm-criteo-t3", "--strategy", "ps",
            "--iterations", "2"]
    assert main(args) == 0
    short = capsys.readouterr().out
    assert main(args + ["--notes", "all"]) == 0
    full = capsys.readouterr().out
    count = lambda text: sum(line.startswith("note: ps cat_") for line in text.splitlines())
    assert count(short) == 6          # two tables' three notes each
    assert count(full) == 78          # 26 tables x 3
    assert "ps: 72 more alike, of 3 kinds (cat_2 ... cat_25)" in " ".join(short.split())


def test_compare_attributes_a_schedulers_notes_to_their_row():
    """embrace-2d's share deferred differs between the strategies it runs under: compare
    prints which row each belongs to, and the count line keeps that attribution."""
    from embsim.compare import CompareRow
    from embsim.report.notes import attributed
    ps = CompareRow(strategy="ps", scheduler="embrace-2d")
    assert attributed(ps, "ps cat_0: local aggregation") == "ps cat_0: local aggregation"
    note = "embrace-2d: 82 % of cat_0_lookup's embedding traffic deferred"
    assert attributed(ps, note) == f"(ps/embrace-2d) {note}"
    assert subject(attributed(ps, note)) == "cat_0_lookup"
    notes = [attributed(ps, f"embrace-2d: {i} % of cat_{i}_lookup's traffic deferred") for i in range(8)]
    assert condense(notes)[2].startswith("(ps/embrace-2d) embrace-2d: 6 more alike (cat_2_lookup ... cat_7_lookup)")

"""Model files: a layer that reads another width than the layer before it writes, a blank
table `input`, a --seq past a model's learned position table and a --seq for a per-sample
model are refused in one line naming the file / layer / model; every shipped model file
still loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from embsim.cli import main
from embsim.errors import InputError
from embsim.workload import load_model, load_spec
from embsim.workload.spec import load_model_spec, per_sample, position_limit
from embsim.workload.width_chain import chain_problem

ROOT = Path(__file__).resolve().parents[2]

HEAD = """name: m
source: test
defaults: {batch: 4, seq: 8, dtype: fp32, optimizer: adam}
tables:
  - {name: word, vocab: 100, dim: 8, input: INPUT}
layers:
  - {name: emb, kind: embedding, table: word}
"""


def write(tmp_path, layers: str, input: str = "tokens") -> Path:
    path = tmp_path / "m.yaml"
    path.write_text(HEAD.replace("INPUT", input) + layers
                    + "  - {name: loss, kind: softmax_loss, classes: word}\n")
    return path


@pytest.mark.parametrize("layers, words", [
    ("  - {name: lstm, kind: lstm, in: 8, hidden: 8}\n"
     "  - {name: head, kind: linear, in: 9, out: 100}\n",
     ["layers.2.in", "'head' reads in 9", "'lstm' (lstm, hidden 8)", "writes 8"]),
    ("  - {name: lstm, kind: lstm, in: 8, hidden: 8, bidirectional: true}\n"
     "  - {name: head, kind: linear, in: 8, out: 100}\n",
     ["'head' reads in 8", "hidden 8 x 2 directions", "writes 16"]),
    ("  - {name: lstm, kind: lstm, in: 8, hidden: 32, proj: 8}\n"
     "  - {name: next, kind: lstm, in: 32, hidden: 8}\n",
     ["layers.2.in", "proj 8"]),
    ("  - {name: a, kind: linear, in: 8, out: 16}\n"
     "  - {name: norm, kind: layernorm, dim: 8}\n",
     ["layers.2.dim", "'norm' reads dim 8", "out 16"]),
])
def test_a_width_mismatch_names_the_file_and_layer(tmp_path, capsys, layers, words):
    path = write(tmp_path, layers)
    assert main(["model", "show", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err, err
    for w in words:
        assert w in err, err


@pytest.mark.parametrize("layers", [
    # a chain that fits
    "  - {name: lstm, kind: lstm, in: 8, hidden: 16, bidirectional: true}\n"
    "  - {name: head, kind: linear, in: 32, out: 100}\n",
    # a repeated layer's own repeats are not chained (GNMT's decoder reads [h, context])
    "  - {name: dec, kind: lstm, repeat: 3, in: 16, hidden: 8}\n"
    "  - {name: head, kind: linear, in: 8, out: 100}\n",
    # other rows: a per-sample head after per-token layers
    "  - {name: a, kind: linear, in: 8, out: 16}\n"
    "  - {name: pool, kind: linear, in: 8, out: 4, per: sample}\n",
    # a second head after the first reads a width an earlier layer writes: a branch
    "  - {name: trunk, kind: linear, in: 8, out: 16}\n"
    "  - {name: head_a, kind: linear, in: 16, out: 2}\n"
    "  - {name: head_b, kind: linear, in: 16, out: 3}\n",
    # a concatenation with an input the file does not name: inputs x dim is what it writes
    "  - {name: a, kind: linear, in: 8, out: 16}\n"
    "  - {name: cat, kind: combine, op: concat, inputs: 2, dim: 16}\n"
    "  - {name: b, kind: linear, in: 32, out: 4}\n",
])
def test_what_the_format_cannot_tell_is_left_alone(tmp_path, layers):
    load_model_spec(write(tmp_path, layers))


def shipped_model_files():
    files = sorted((ROOT / "embsim/workload/zoo").glob("*.yaml"))
    for folder in (ROOT / "embsim/validation_data", ROOT.parent / "shared/validation"):
        files += [p for p in sorted(folder.rglob("*.yaml"))
                  if p.is_file() and "\nlayers:" in p.read_text(errors="replace")]
    return files


def test_every_shipped_model_file_still_loads():
    files = shipped_model_files()
    assert len(files) > 40
    for path in files:
        spec = load_model_spec(path)
        assert chain_problem(spec.layers) is None, path


def test_a_blank_table_input_is_refused(tmp_path, capsys):
    path = write(tmp_path, "", input='"  "')
    assert main(["model", "show", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "tables.0.input" in err and "must not be empty" in err and str(path) in err


def test_a_table_input_is_a_free_label(tmp_path):
    # nothing reads it but `model show`: feature names (Criteo's C1, Outbrain's ad_id) are fine
    assert load_model_spec(write(tmp_path, "", input="pixels")).tables[0].input == "pixels"


def test_seq_past_the_learned_positions_is_refused(capsys):
    assert position_limit(load_spec("bert-base")) == ("position_embedding", 512)
    assert position_limit(load_spec("gpt2")) == ("position_embedding", 1024)
    assert position_limit(load_spec("transformer-wmt")) is None      # sinusoidal
    assert position_limit(load_spec("llama3-8b")) is None            # rotary: no table
    load_model("bert-base", seq=512)
    with pytest.raises(InputError, match=r"seq \(--seq\) 513: bert-base has 512 learned positions "
                                         r"\(its position table 'position_embedding'"):
        load_model("bert-base", seq=513)
    # a longer table given as a run override (llm-foundry's MPT grows its table) is the limit
    load_model("mpt-1b", seq=8192, overrides={"layers": {"position_embedding": {"rows": 8192}}})
    rc = main(["simulate", "--topology", "1x2", "--model", "bert-base", "--seq", "513"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "bert-base" in err and "512" in err, err


def test_seq_of_a_per_sample_model_is_refused(capsys):
    # a recommender reads one row of features per sample: --seq would only multiply its work
    assert per_sample(load_spec("ncf-ml20m")) and per_sample(load_spec("dlrm-criteo-f15"))
    assert not per_sample(load_spec("bert-base")) and not per_sample(load_spec("lstm-lm1b"))
    load_model("ncf-ml20m", seq=1)
    with pytest.raises(InputError, match=r"seq \(--seq\) 4: ncf-ml20m reads one row of features"):
        load_model("ncf-ml20m", seq=4)
    rc = main(["simulate", "--topology", "1x2", "--model", "dlrm-criteo-t3", "--seq", "8"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "leave --seq out" in err, err

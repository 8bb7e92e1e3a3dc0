"""Model files: widths are checked through `combine` layers (what a concat, product or sum
writes is what the next linear must read; a concat `dim` the embeddings feeding it cannot
have is refused), a default `seq` past the learned position table is refused as --seq is,
and dtype / amp names are read whatever their case (FP32, O2), in model and training files."""

from __future__ import annotations

from pathlib import Path

import pytest

from embsim.cli import main
from embsim.engine.config import SimulationConfig
from embsim.errors import InputError
from embsim.workload.spec import load_model_spec

ROOT = Path(__file__).resolve().parents[2]

# DLRM's shape: a bottom MLP, four 8-wide bag lookups, their concatenation, a top MLP
RECSYS = """name: r
source: test
defaults: {batch: 4, seq: 1, dtype: DTYPE, optimizer: adam}
tables:
  - {name: t0, vocab: 100, dim: 8, input: c0}
  - {name: t1, vocab: 100, dim: 8, input: c1}
  - {name: t2, vocab: 100, dim: 8, input: c2}
  - {name: t3, vocab: 100, dim: 8, input: c3}
layers:
  - {name: bot, kind: linear, in: 13, out: 8}
  - {name: l0, kind: embedding, table: t0, lookups: 1, pooling: sum}
  - {name: l1, kind: embedding, table: t1, lookups: 1, pooling: sum}
  - {name: l2, kind: embedding, table: t2, lookups: 1, pooling: sum}
  - {name: l3, kind: embedding, table: t3, lookups: 1, pooling: sum}
LAYERS  - {name: loss, kind: softmax_loss, classes: 1}
"""


def recsys(tmp_path, layers: str, dtype: str = "fp32", drop: str = "") -> Path:
    path = tmp_path / "r.yaml"
    text = RECSYS.replace("DTYPE", dtype).replace("LAYERS", layers)
    path.write_text("".join(line + "\n" for line in text.splitlines() if not drop or drop not in line))
    return path


def refused(path, capsys) -> str:
    assert main(["model", "show", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(path) in err, err
    return err


@pytest.mark.parametrize("layers, words", [
    # 5 x 8 = 40 features joined; the next linear reads 99
    ("  - {name: cat, kind: combine, op: concat, inputs: 5, dim: 8}\n"
     "  - {name: top, kind: linear, in: 99, out: 1}\n",
     ["layers.6.in", "'top' reads in 99", "concat of 5 inputs x dim 8", "writes 40 features"]),
    # a concat of 8-wide vectors written as 4 wide
    ("  - {name: cat, kind: combine, op: concat, inputs: 5, dim: 4}\n"
     "  - {name: top, kind: linear, in: 20, out: 1}\n",
     ["layers.5.dim", "'cat'", "'bot' to 'l3'", "40 features", "mean width of 8, not dim 4"]),
    # ... or as 16 wide
    ("  - {name: cat, kind: combine, op: concat, inputs: 5, dim: 16}\n"
     "  - {name: top, kind: linear, in: 80, out: 1}\n",
     ["layers.5.dim", "mean width of 8, not dim 16"]),
    # one input the file does not name is at least 1 wide: 4 x 8 + 1 over 5 is past dim 4
    ("  - {name: cat, kind: combine, op: concat, inputs: 5, dim: 4}\n"
     "  - {name: top, kind: linear, in: 20, out: 1}\n",
     ["layers.4.dim", "4 vectors", "and 1 more", "at least 33 features"]),
    # a product or sum reads vectors of its own dim
    ("  - {name: prod, kind: combine, op: product, inputs: 4, dim: 4}\n",
     ["layers.5.dim", "'prod' (product) reads vectors of width 4", "'l3' before it writes 8"]),
    ("  - {name: cat, kind: combine, op: concat, inputs: 5, dim: 8}\n"
     "  - {name: top, kind: linear, in: 40, out: 16}\n"
     "  - {name: res, kind: combine, op: sum, inputs: 2, dim: 16}\n"
     "  - {name: out, kind: linear, in: 15, out: 1}\n",
     ["layers.8.in", "'res' (combine, sum, dim 16), writes 16"]),
])
def test_a_width_through_a_combine_is_checked(tmp_path, capsys, layers, words):
    # without the bottom MLP, the concat's fifth input is not named in the file
    err = refused(recsys(tmp_path, layers, drop="name: bot," if "and 1 more" in words else ""), capsys)
    for w in words:
        assert w in err, err


@pytest.mark.parametrize("layers", [
    "  - {name: cat, kind: combine, op: concat, inputs: 5, dim: 8}\n"
    "  - {name: top, kind: linear, in: 40, out: 1}\n",
    # a mean width rounded (the zoo's Merlin files: 58 embeddings and 10 numerics as 59 x 12)
    "  - {name: cat, kind: combine, op: concat, inputs: 6, dim: 9}\n"
    "  - {name: top, kind: linear, in: 50, out: 1}\n",
    # more vectors than the concat joins: which, the file does not say
    "  - {name: cat, kind: combine, op: concat, inputs: 2, dim: 3}\n"
    "  - {name: top, kind: linear, in: 6, out: 1}\n",
    # an earlier width read again is a branch
    "  - {name: cat, kind: combine, op: concat, inputs: 5, dim: 8}\n"
    "  - {name: top, kind: linear, in: 8, out: 1}\n",
    "  - {name: prod, kind: combine, op: product, inputs: 4, dim: 8}\n"
    "  - {name: top, kind: linear, in: 8, out: 1}\n",
])
def test_combine_widths_that_fit_or_cannot_be_told_are_accepted(tmp_path, layers):
    load_model_spec(recsys(tmp_path, layers))


def test_a_default_seq_past_the_learned_positions_is_refused(tmp_path, capsys):
    text = """name: lm
source: test
defaults: {batch: 4, seq: SEQ, dtype: fp32, optimizer: adam}
tables:
  - {name: word, vocab: 100, dim: 16, input: tokens}
layers:
  - {name: emb, kind: embedding, table: word}
  - {name: pos, kind: positional_embedding, rows: 1024, dim: 16}
  - {name: segment, kind: positional_embedding, rows: 2, dim: 16}
  - {name: dec, kind: transformer_decoder, dim: 16, heads: 2, ffn: 64}
  - {name: loss, kind: softmax_loss, classes: word}
"""
    path = tmp_path / "lm.yaml"
    path.write_text(text.replace("SEQ", "1024"))
    load_model_spec(path)
    path.write_text(text.replace("SEQ", "2048"))
    err = refused(path, capsys)
    assert ("defaults.seq (line 3): 2,048: lm has 1,024 learned positions (its position table "
            "'pos', rows: 1024), so at most 1,024") in err, err
    # a token-type table alone (rotary positions) bounds nothing
    path.write_text(text.replace("SEQ", "2048").replace("  - {name: pos,", "  # "))
    load_model_spec(path)


def test_dtype_and_amp_names_are_read_whatever_their_case(tmp_path, capsys):
    path = recsys(tmp_path, "")
    path.write_text(path.read_text().replace("optimizer: adam}", "optimizer: adam, amp: O2}")
                    .replace("dtype: fp32", "dtype: FP32"))
    spec = load_model_spec(path)
    assert (spec.dtype, spec.amp) == ("fp32", "o2")
    path.write_text(path.read_text().replace("amp: O2", "amp: O3"))
    assert "defaults.amp (line 3): must be one of autocast, o2, megatron, got 'O3'" in refused(path, capsys)
    path.write_text(path.read_text().replace("amp: O3", "amp: o2").replace("FP32", "Int8"))
    assert "defaults.dtype (line 3): must be one of fp32, tf32, bf16, fp16, fp8, got 'Int8'" \
        in refused(path, capsys)
    # the training file's embsim: block and every other config reader
    assert SimulationConfig(topology="1x2", model="tiny-lm", amp="O2").amp == "o2"
    with pytest.raises(InputError, match=r"--amp 'O3': must be one of autocast, o2, megatron"):
        SimulationConfig(topology="1x2", model="tiny-lm", amp="O3")


def test_a_training_file_takes_amp_in_capitals(tmp_path, capsys):
    path = tmp_path / "t.yaml"
    path.write_text("runs: [{id: a, gpus: 2, value: 100, embsim: {topology: 1x2, model: tiny-lm, "
                    "dtype: FP16, amp: O2}}]\n")
    assert main(["validate", "--training", str(path), "--iterations", "2"]) == 0, capsys.readouterr().err

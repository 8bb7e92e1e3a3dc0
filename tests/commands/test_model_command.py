"""`embsim model list` / `embsim model show NAME|FILE [--json]` (embsim.commands.model):
the zoo as users see it. Counts are checked against figures derived here from the models'
published configurations, not against the code's own output."""

import json

import pytest
from click.testing import CliRunner

from embsim.cli import main
from embsim.commands.model import command
from embsim.commands.listing import first_sentence
from embsim.errors import InputError
from embsim.workload import ZOO_DIR, list_models, load_model


def _show_json(capsys, name: str) -> dict:
    assert main(["model", "show", name, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_bert_large_parameters_from_its_config(capsys):
    # google-research/bert bert_config.json for BERT-large: hidden 1024, 24 layers, FFN 4096,
    # vocab 30,522, 512 positions, 2 segments; BertForPreTraining's heads: pooler, NSP 1024 -> 2,
    # MLM transform 1024 -> 1024 + LayerNorm, decoder tied to the word table with its own bias.
    h, v, f, n = 1024, 30522, 4096, 24
    embeddings = v * h + 512 * h + 2 * h + 2 * h               # word, position, segment, LayerNorm
    block = 4 * (h * h + h) + (h * f + f) + (f * h + h) + 2 * (2 * h)
    heads = (h * h + h) + (2 * h + 2) + (h * h + h) + 2 * h + v
    expected = embeddings + n * block + heads                    # 336,226,108 (~335M + heads)
    s = _show_json(capsys, "bert-large")
    assert abs(s["parameters"]["total"] / expected - 1) < 0.01
    assert s["parameters"]["embedding"] == v * h                 # the one sparse-capable table
    assert s["parameters"]["dense"] == s["parameters"]["total"] - v * h
    assert s["parameters"]["published"] == {"params": 340e6}
    assert s["tables"] == [{"name": "word", "vocab": 30522, "dim": 1024, "params": 30522 * 1024,
                            "input": "tokens", "lookups_per_sample": 128, "tied_to": "mlm_output",
                            "weight_of": None, "sampled": 0}]
    assert s["layers_by_kind"]["transformer_encoder"] == 24
    assert sum(s["layers_by_kind"].values()) == len(load_model("bert-large").layers)
    assert s["defaults"] | {"padding": None} == {
        "batch": 16, "seq": 128, "dtype": "fp32", "optimizer": "lamb",
        "optimizer_implementation": "fused", "amp": "o2", "lengths": "wikipedia",
        "padding": None, "global_batch": s["defaults"]["global_batch"], "framework": "pytorch"}
    assert s["defaults"]["padding"] == {"512": "bins:64:8", "other": "longest:8"}


def test_bert_large_flops_per_sample(capsys):
    """Forward FLOPs of one 128-token sample, by hand: 2 per encoder weight per token, the
    attention scores and context (2 x 2 x seq^2 x hidden per layer) and the MLM head on
    the 15 % masked tokens (transform + tied 30,522-way projection)."""
    h, v, seq, n = 1024, 30522, 128, 24
    encoder = n * (4 * h * h + 2 * h * 4096)
    forward = 2 * encoder * seq + n * 2 * 2 * seq * seq * h + 2 * (h * h + h * v) * 0.15 * seq
    s = _show_json(capsys, "bert-large")
    flops = s["flops_per_sample"]
    assert abs(flops["forward"] / forward - 1) < 0.02, (flops["forward"], forward)
    assert 1.9 < flops["backward"] / flops["forward"] < 2.1       # weight + input gradients
    assert flops["total"] == pytest.approx(flops["forward"] + flops["backward"])
    assert flops["total"] == pytest.approx(sum(layer["flops_per_sample"] for layer in s["layers"]))
    assert (flops["batch"], flops["seq"]) == (16, 128)
    # per sample, not per batch: a larger batch leaves it unchanged
    m = load_model("bert-large", batch=32)
    assert sum(l.fwd_flops for l in m.layers) / 32 == pytest.approx(flops["forward"])


def test_sampled_softmax_table_and_json_schema(capsys):
    s = _show_json(capsys, "lstm-lm1b")
    assert set(s) == {"schema", "name", "description", "file", "source", "defaults", "parameters",
                      "tables", "layers_by_kind", "layers", "flops_per_sample"}
    assert s["schema"] == 1 and s["file"] == str(ZOO_DIR / "lstm-lm1b.yaml")
    assert set(s["defaults"]) == {"batch", "seq", "dtype", "optimizer", "optimizer_implementation",
                                  "amp", "lengths", "padding", "global_batch", "framework"}
    assert set(s["parameters"]) == {"total", "dense", "embedding", "published"}
    assert set(s["flops_per_sample"]) == {"forward", "backward", "total", "batch", "seq"}
    (word,) = s["tables"]
    # Zen (OSDI'25) Table 1: 406M embedding parameters; the zoo's vocabulary x dim
    assert (word["vocab"], word["dim"]) == (793471, 512) and word["params"] == 793471 * 512
    assert word["tied_to"] == "softmax" and word["sampled"] == 8192
    for layer in s["layers"]:
        assert set(layer) == {"name", "kind", "repeat", "params", "flops_per_sample"}
    assert [(l["name"], l["repeat"]) for l in s["layers"]][:2] == [("word_embedding", 1), ("lstm", 2)]
    assert sum(l["params"] for l in s["layers"]) == s["parameters"]["total"]


def test_recommender_with_many_tables(capsys):
    s = _show_json(capsys, "dlrm-tf2-criteo-t3")
    assert len(s["tables"]) == 26
    # DLE's model table: 22.8e9 parameters, nearly all in the tables
    assert abs(s["parameters"]["embedding"] / 22.8e9 - 1) < 0.01
    assert s["parameters"]["embedding"] == sum(t["vocab"] * t["dim"] for t in s["tables"])


def test_text_form_names_tables_and_flops():
    result = CliRunner().invoke(command, ["show", "bert-large"])
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.startswith("bert-large  (") and "336,226,108" in out
    assert "table word: 30,522 x 1,024 = 31,254,528" in out
    assert "24 transformer_encoder" in out and "FLOPs" in out and "per sample" in out
    assert "Source      Devlin et al. 2019," in out      # not cut at "et al."


def test_show_a_file_by_path(tmp_path, capsys):
    path = tmp_path / "mine.yaml"
    path.write_text((ZOO_DIR / "tiny-lm.yaml").read_text().replace("name: tiny-lm", "name: mine", 1))
    s = _show_json(capsys, str(path))
    assert s["name"] == "mine" and s["file"] == str(path)
    assert s["parameters"]["total"] == load_model("tiny-lm").params


def test_list_prints_every_zoo_model_with_its_description(capsys):
    assert main(["model", "list"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert [l.split()[0] for l in lines] == list_models()
    bert = next(l for l in lines if l.split()[0] == "bert-large")
    assert "BERT-large pre-training" in bert
    assert str(ZOO_DIR) in err


@pytest.mark.parametrize("text, expect", [
    ("Devlin et al. 2019, a. B", "Devlin et al. 2019, a."),
    ("One line.\n  Two.", "One line."),
    ("no stop at all", "no stop at all"),
])
def test_first_sentence(text, expect):
    assert first_sentence(text) == expect


@pytest.mark.parametrize("args, needles", [
    (["model", "show", "nope"], ["model show nope: unknown model 'nope'", "bert-large"]),
    (["model", "show", "missing.yaml"], ["model show missing.yaml: no such file"]),
    (["model", "show", "/"], ["model show /", "a directory"]),
    (["model", "show"], ["Missing argument 'NAME'"]),
    (["model", "show", "bert-large", "--colour"], ["--colour"]),
    (["model", "list", "extra"], ["extra"]),
])
def test_bad_input_is_one_line_exit_2(capsys, args, needles):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("embsim: error:") and err.count("\n") == 1, err
    for needle in needles:
        assert needle in err, err


@pytest.mark.parametrize("edit, needles", [
    (lambda t: t.replace("defaults:", "colour: red\ndefaults:", 1), ["colour"]),
    (lambda t: t + "\n  - {name: x, kind: linear, in: 0, out: 4}\n", ["in", "must be positive"]),
    (lambda t: t.replace("layers:", "layers: [", 1), ["mine.yaml"]),
    # an output layer's own table is a sampled softmax's: without samples it is refused
    (lambda t: t.replace("tied: word, bias: true", "table: word, bias: true", 1),
     ["layers.2.table", "needs samples"]),
    (lambda t: t.replace("input: tokens}", "input: tokens}\n  - {name: out_w, vocab: 10, dim: 64, "
                         "input: ids}", 1), ["tables.1", "'out_w' is read by no embedding layer"]),
])
def test_bad_model_file_names_file_and_key(tmp_path, capsys, edit, needles):
    path = tmp_path / "mine.yaml"
    path.write_text(edit((ZOO_DIR / "tiny-lm.yaml").read_text().replace("name: tiny-lm", "name: mine", 1)))
    assert main(["model", "show", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"embsim: error: model show {path}") and err.count("\n") == 1, err
    for needle in needles:
        assert needle in err, err


def test_command_alone_raises_input_error():
    result = CliRunner().invoke(command, ["show", "nope"])
    assert isinstance(result.exception, InputError)


def test_bare_group_prints_its_help(capsys):
    assert main(["model"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("Usage:") and "list" in out and "show" in out and err == ""


def test_unknown_model_names_the_command_once(capsys):
    # the value 'unknown' opens the loader's own message ("unknown model ..."): the
    # prefix must not be chosen by what the message happens to start with
    assert main(["model", "show", "unknown"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("embsim: error: model show unknown: unknown model 'unknown' (known: "), err
    assert err.count("\n") == 1, err


def test_show_reads_a_user_file_once(tmp_path, capsys, monkeypatch):
    import embsim.workload as workload
    path = tmp_path / "mine.yaml"
    path.write_text((ZOO_DIR / "tiny-lm.yaml").read_text().replace("name: tiny-lm", "name: mine", 1))
    reads = []
    real = workload.load_model_spec
    monkeypatch.setattr(workload, "load_model_spec", lambda p: reads.append(p) or real(p))
    assert main(["model", "show", str(path)]) == 0
    assert reads == [str(path)]
    assert "mine" in capsys.readouterr().out

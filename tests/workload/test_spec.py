"""Bad model files are rejected with the file, the key path and the line."""

import re
from pathlib import Path

import pytest

from embsim.errors import InputError
from embsim.workload import load_model, load_spec

GOOD = """\
name: mini
source: test
defaults:
  batch: 2
  seq: 8
  dtype: fp32
  optimizer: adam
tables:
  - {name: word, vocab: 100, dim: 16, input: tokens}
layers:
  - {name: emb, kind: embedding, table: word}
  - {name: proj, kind: linear, in: 16, out: 16}
  - {name: out, kind: output_projection, dim: 16, tied: word}
  - {name: loss, kind: softmax_loss, classes: word}
"""


def write(tmp_path, text):
    path = tmp_path / "model.yaml"
    path.write_text(text)
    return str(path)


def test_good_file_loads(tmp_path):
    m = load_model(write(tmp_path, GOOD))
    assert m.name == "mini" and m.params == 100 * 16 + 16 * 16 + 16


@pytest.mark.parametrize("old,new,key,line", [
    ("source: test\n", "source: test\ncolour: red\n", "colour", 3),                 # unknown top key
    ("  seq: 8\n", "  seq: 8\n  sequence: 9\n", "defaults.sequence", 6),            # unknown nested key
    ("in: 16, out: 16}", "in: 16, out: 16, widht: 3}", "layers.1.widht", 12),     # unknown layer key
    ("kind: linear", "kind: conv2d", "layers.1.kind", 12),                         # unknown kind
    ("table: word}", "table: words}", "layers.0.table", 11),                       # dangling table
    ("dtype: fp32", "dtype: fp4", "defaults.dtype", 6),                            # bad enum
    ("batch: 2", "batch: -2", "defaults.batch", 4),                                # not positive
    ("in: 16,", "in: sixteen,", "layers.1.in", 12),                                # wrong type
    ("out, kind: output_projection, dim: 16", "out, kind: output_projection, dim: 32",
     "layers.2.dim", 13),                                                          # tied dim mismatch
    ("classes: word}", "classes: word, token_fraction: 0}", "layers.3.token_fraction", 14),  # out of (0, 1]
    ("  optimizer: adam\n", "  optimizer: adam\n  amp: o3\n", "defaults.amp", 8),   # trainer defaults
    ("  optimizer: adam\n", "  optimizer: adam\n  optimizer_options: {implementation: loop}\n",
     "defaults.optimizer_options.implementation", 8),
    ("  optimizer: adam\n", "  optimizer: adam\n  optimizer_options: {lr: 1}\n",
     "defaults.optimizer_options.lr", 8),
    ("  optimizer: adam\n", "  optimizer: adam\n  jitter: 3\n", "defaults.jitter", 8),
    ("  optimizer: adam\n", "  optimizer: adam\n  framework: jax\n", "defaults.framework", 8),
    ("kind: linear, in: 16, out: 16}", "kind: transformer_encoder, dim: 16, heads: 2, ffn: 32, "
     "flash_attention: fa9}", "layers.1.flash_attention", 12),                  # no such kernel
    ("  optimizer: adam\n", "  optimizer: adam\n  options: 25\n", "defaults.options", 8),
    ("  optimizer: adam\n", "  optimizer: adam\n  options: {bucket_bytes: [1, 2]}\n",
     "defaults.options.bucket_bytes", 8),
])
def test_bad_file_names_file_key_and_line(tmp_path, old, new, key, line):
    assert old in GOOD
    path = write(tmp_path, GOOD.replace(old, new, 1))
    with pytest.raises(InputError) as exc:
        load_model(path)
    msg = str(exc.value)
    assert msg.startswith(path), msg
    assert re.search(rf"\b{re.escape(key)}\b", msg), msg
    assert f"(line {line})" in msg, msg


def test_missing_key_and_invalid_yaml(tmp_path):
    with pytest.raises(InputError, match="missing required key 'layers'"):
        load_model(write(tmp_path, GOOD.split("layers:")[0]))
    with pytest.raises(InputError, match=r"line \d+.*not valid YAML"):
        load_model(write(tmp_path, GOOD + "  - {name: [\n"))


def test_unused_table_rejected(tmp_path):
    text = GOOD.replace("tables:\n", "tables:\n  - {name: spare, vocab: 5, dim: 2, input: x}\n")
    with pytest.raises(InputError, match="spare.*no embedding layer"):
        load_model(write(tmp_path, text))


def test_hashed_field_vocabulary(tmp_path):
    text = GOOD.replace("{name: word, vocab: 100, dim: 16, input: tokens}",
                        "{name: word, fields: [10, 500, 70], hash_buckets: 60, dim: 16, input: f}")
    m = load_model(write(tmp_path, text))
    assert m.table("word").vocab == 10 + 60 + 60


def test_token_fraction_scales_the_head_rows(tmp_path):
    half = GOOD.replace("dim: 16, tied: word}", "dim: 16, tied: word, token_fraction: 0.5}")
    full, masked = load_model(write(tmp_path, GOOD)), load_model(write(tmp_path, half))
    assert masked.layer("out").fwd_flops == full.layer("out").fwd_flops // 2


def test_trainer_defaults_are_read(tmp_path):
    extra = ("  amp: o2\n  optimizer_options: {implementation: per-tensor, clip_grad_norm: true}\n"
             "  jitter: maxtokens\n  lengths: lognormal:29:16\n")
    spec = load_spec(write(tmp_path, GOOD.replace("  optimizer: adam\n", "  optimizer: adam\n" + extra)))
    assert (spec.amp, spec.jitter, spec.lengths) == ("o2", "maxtokens", "lognormal:29:16")
    assert spec.optimizer_implementation == "per-tensor" and spec.clip_grad_norm
    plain = load_spec(write(tmp_path, GOOD))
    assert (plain.amp, plain.jitter, plain.lengths, plain.optimizer_implementation) == (None, None, None, "fused")


def test_the_framework_sets_the_sparse_dedup_unless_the_optimizer_options_do(tmp_path):
    tf = "  optimizer: adam\n  framework: tensorflow\n"
    spec = load_spec(write(tmp_path, GOOD.replace("  optimizer: adam\n", tf)))
    assert (spec.framework, spec.sparse_dedup) == ("tensorflow", "tf-unique")
    told = tf + "  optimizer_options: {sparse_dedup: coalesce}\n"
    spec = load_spec(write(tmp_path, GOOD.replace("  optimizer: adam\n", told)))
    assert (spec.framework, spec.sparse_dedup) == ("tensorflow", "coalesce")
    plain = load_spec(write(tmp_path, GOOD))
    assert (plain.framework, plain.sparse_dedup) == ("pytorch", "coalesce")


def test_trainer_options_are_read(tmp_path):
    extra = "  options: {bucket_bytes: 1.0e+12, first_bucket_bytes: 1048576}\n"
    spec = load_spec(write(tmp_path, GOOD.replace("  optimizer: adam\n", "  optimizer: adam\n" + extra)))
    assert dict(spec.options) == {"bucket_bytes": 1e12, "first_bucket_bytes": 1048576}
    assert load_spec(write(tmp_path, GOOD)).options == ()


def test_billion_row_tables_load_and_a_trillion_more_is_refused(tmp_path):
    # token statistics come in runs past 4M rows (embsim.workload.row_groups), so the bound
    # is far past any real table, not the memory of one float per row
    big = GOOD.replace("{name: word, vocab: 100, dim: 16, input: tokens}",
                       "{name: word, vocab: 3000000000, dim: 16, input: tokens}")
    big = big.replace("  - {name: out, kind: output_projection, dim: 16, tied: word}\n"
                      "  - {name: loss, kind: softmax_loss, classes: word}\n", "")
    assert load_model(write(tmp_path, big)).table("word").vocab == 3_000_000_000
    huge = big.replace("vocab: 3000000000", "vocab: 2000000000000")
    with pytest.raises(InputError, match=r"tables.0.vocab \(line 9\): must be <= 1e\+12"):
        load_model(write(tmp_path, huge))


@pytest.mark.parametrize("keys, words", [
    ("heads: 7", ["layers.4.heads", "7 heads do not split dim 768"]),
    ("heads: 12, kv_heads: 5", ["layers.4.kv_heads", "must divide the 12 query heads"]),
    ("heads: 12, kv_heads: 24", ["layers.4.kv_heads", "must divide the 12 query heads"]),
])
def test_attention_heads_must_fit_the_width(tmp_path, keys, words):
    # accepted before, and simulated with fractional head widths
    zoo = Path(__file__).resolve().parents[2] / "embsim" / "workload" / "zoo" / "bert-base.yaml"
    text = zoo.read_text().replace("heads: 12,", keys + ",", 1)
    assert text != zoo.read_text()
    path = tmp_path / "m.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        load_spec(str(path))
    for w in words:
        assert w in str(info.value), (w, str(info.value))


# an output layer with a table of its own: a sampled softmax's weight (softmax_w)
OWN_TABLE = GOOD.replace(
    "  - {name: word, vocab: 100, dim: 16, input: tokens}\n",
    "  - {name: word, vocab: 100, dim: 16, input: tokens}\n"
    "  - {name: out_w, vocab: 100, dim: 16, input: sampled ids}\n").replace(
    "{name: out, kind: output_projection, dim: 16, tied: word}",
    "{name: out, kind: output_projection, dim: 16, table: out_w, samples: 10}")


def test_an_output_layer_may_own_a_sampled_softmax_table(tmp_path):
    m = load_model(write(tmp_path, OWN_TABLE))
    t, out = m.table("out_w"), m.layer("out")
    assert t.weight_of == "out" and t.sampled == 10 and t.lookups_per_sample == 8
    assert out.table == "out_w" and out.sparse and out.params == 100 * 16
    assert m.table_owner("out_w") == "out" and m.embedding_params == 2 * 100 * 16


@pytest.mark.parametrize("old,new,key,line,words", [
    ("table: out_w, samples: 10}", "table: out_w}", "layers.2.table", 14, "needs samples"),
    ("table: out_w,", "table: out_w, tied: word,", "layers.2", 14, "exactly one of"),
    ("table: out_w,", "table: out_w, vocab: 100,", "layers.2", 14, "exactly one of"),
    ("table: out_w,", "table: out_x,", "layers.2.table", 14, "no table named 'out_x'"),
    ("{name: out_w, vocab: 100, dim: 16", "{name: out_w, vocab: 100, dim: 8", "layers.2.dim", 14,
     "has dim 8, not 16"),
    ("{name: emb, kind: embedding, table: word}", "{name: emb, kind: embedding, table: out_w}",
     "layers.2.table", 14, "also read by embedding layer 'emb'"),
    ("{name: out, kind: output_projection,", "{name: out, kind: output_projection, repeat: 2,",
     "layers.2.repeat", 14, "give each its own"),
    ("table: out_w, samples: 10}", "vocab: 100, samples: 10}", "tables.1", 10,
     "'out_w' is read by no embedding layer"),
])
def test_bad_own_tables_are_refused_in_one_line(tmp_path, old, new, key, line, words):
    assert old in OWN_TABLE
    path = write(tmp_path, OWN_TABLE.replace(old, new, 1))
    with pytest.raises(InputError) as exc:
        load_model(path)
    msg = str(exc.value)
    assert msg.startswith(path) and "\n" not in msg, msg
    assert re.search(rf"\b{re.escape(key)}\b", msg) and f"(line {line})" in msg, msg
    assert words in msg, msg

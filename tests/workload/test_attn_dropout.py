"""`attn_dropout: false` on a transformer block: the attention probabilities' dropout at
p = 0 (BART's attention_dropout 0.0, as DeepLearningExamples' BART config sets it) launches
no kernel in PyTorch and saves no mask, while the block's hidden dropouts stay."""

from embsim.workload import load_model

BLOCK = "{{name: encoder, kind: transformer_encoder, repeat: 2, dim: 256, heads: 4, ffn: 1024{extra}}}"


def _model(tmp_path, extra):
    path = tmp_path / f"m{len(extra)}.yaml"
    path.write_text(f"""name: tiny-enc
description: two encoder blocks
source: a test model
defaults: {{batch: 8, seq: 128, dtype: fp16, optimizer: adam}}
tables:
  - {{name: words, vocab: 1000, dim: 256, input: tokens}}
layers:
  - {{name: embed, kind: embedding, table: words}}
  - {BLOCK.format(extra=extra)}
  - {{name: head, kind: output_projection, dim: 256, tied: words}}
  - {{name: loss, kind: softmax_loss, classes: words}}
""")
    return load_model(str(path))


def _names(model):
    layer = next(l for l in model.layers if l.name.startswith("encoder"))
    return {k.name for k in (*layer.kernels.fwd, *layer.kernels.bwd)}, layer


def test_attention_dropout_off_drops_its_kernels_and_mask_only(tmp_path):
    on_names, on = _names(_model(tmp_path, ""))
    off_names, off = _names(_model(tmp_path, ", attn_dropout: false"))
    assert {"self_attn.attn_dropout", "self_attn.attn_dropout_bwd"} <= on_names
    assert on_names - off_names == {"self_attn.attn_dropout", "self_attn.attn_dropout_bwd"}
    assert "self_attn.dropout" in off_names          # the hidden dropout after the projection
    scores = 8 * 4 * 128 * 128
    # the probabilities' 1-byte mask and their dropped copy (fp16) are no longer saved
    assert on.activation_bytes - off.activation_bytes == scores * (1 + 2)


def test_dropout_false_still_turns_every_dropout_off(tmp_path):
    names, _ = _names(_model(tmp_path, ", dropout: false"))
    assert not any("dropout" in n for n in names)

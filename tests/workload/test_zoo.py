"""Model zoo: every model loads, and parameter counts computed from the shapes match the
published figures (stated in each YAML's `published:` block, with its source) within 2 %."""

import pytest

from embsim.errors import InputError
from embsim.workload import list_models, load_model

EXPECTED = {"tiny-lm", "lstm-lm1b", "gnmt", "transformer-wmt", "bert-base", "bert-large",
            "gpt2", "nmt-iwslt", "deepfm-criteo", "llama3-8b", "bert-large-squad",
            "llama2-7b", "gpt3-5b", "mpt-125m", "mpt-350m", "mpt-760m", "mpt-1b",
            "mpt-3b", "mpt-7b", "mpt-13b", "mpt-30b", "mpt-70b", "wide-deep-outbrain",
            "llama3-70b", "dlrm-dcnv2-mlperf"}


def test_zoo_lists_every_model():
    assert EXPECTED <= set(list_models())
    assert list_models() == sorted(list_models())


@pytest.mark.parametrize("name", sorted(EXPECTED - {"tiny-lm"}))
def test_parameter_counts_match_published_within_2_percent(name):
    m = load_model(name)
    assert m.published, f"{name} states no published figure"
    for key, published in m.published.items():
        computed = getattr(m, key)
        assert abs(computed / published - 1) <= 0.02, (name, key, computed, published)


# models whose source publishes no parameter count for the configuration modelled
UNPUBLISHED = {"transformer-xl-base", "transformer-xl-large"}


@pytest.mark.parametrize("name", sorted(EXPECTED | UNPUBLISHED))
def test_model_is_consistent(name):
    m = load_model(name)
    assert m.params == sum(layer.params for layer in m.layers)
    assert m.params == m.dense_params + m.embedding_params
    assert m.embedding_params == sum(t.vocab * t.dim for t in m.tables)
    assert m.source and m.batch > 0 and m.seq > 0
    names = [layer.name for layer in m.layers]
    assert len(names) == len(set(names))
    for t in m.tables:
        assert t.lookups_per_sample > 0
        assert any(layer.table == t.name and layer.kind == "embedding" for layer in m.layers)
        if t.tied_to:
            assert m.layer(t.tied_to).kind == "output_projection"
    for layer in m.layers:
        assert layer.fwd_bytes > 0 and layer.bwd_bytes > 0 and layer.activation_bytes >= 0
        if layer.sparse:
            assert layer.table is not None


def test_layers_are_in_forward_order():
    kinds = [layer.kind for layer in load_model("gpt2").layers]
    assert kinds[0] == "embedding" and kinds[-1] == "softmax_loss"
    assert kinds[-2] == "output_projection"
    wmt = [layer.name for layer in load_model("transformer-wmt").layers]
    assert wmt.index("encoder.5") < wmt.index("target_embedding") < wmt.index("decoder.0")


def test_tying_and_sharing():
    gpt2 = load_model("gpt2")
    assert gpt2.table("word").tied_to == "lm_head"
    assert gpt2.layer("lm_head").params == 0          # the table is owned by the embedding
    assert not gpt2.layer("lm_head").sparse           # full softmax: every row gets a gradient
    llama = load_model("llama3-8b")
    assert llama.table("word").tied_to is None
    assert llama.layer("lm_head").params == 128256 * 4096
    assert llama.dtype == "bf16" and llama.dtype_bytes == 2
    assert llama.optimizer.master_bytes_per_param == 4
    wmt = load_model("transformer-wmt")               # one table read by encoder and decoder
    assert wmt.table("shared_bpe").lookups_per_sample == 2 * wmt.seq
    assert wmt.layer("target_embedding").params == 0
    lm1b = load_model("lstm-lm1b")                    # sampled softmax keeps the gradient sparse
    assert lm1b.layer("softmax").sparse and lm1b.layer("word_embedding").sparse
    deepfm = load_model("deepfm-criteo")
    assert deepfm.table("factors").lookups_per_sample == 26


def test_batch_and_seq_override_rescale_costs():
    a = load_model("bert-base")
    b = load_model("bert-base", batch=2 * a.batch)
    assert b.params == a.params and b.batch == 2 * a.batch
    assert b.layer("encoder.0").fwd_flops == 2 * a.layer("encoder.0").fwd_flops
    c = load_model("bert-base", seq=512)
    # attention is quadratic in seq, so 4x the tokens costs more than 4x the FLOPs
    assert c.layer("encoder.0").fwd_flops > 4 * a.layer("encoder.0").fwd_flops
    assert c.table("word").lookups_per_sample == 512


def test_tiny_lm_is_small():
    m = load_model("tiny-lm")
    assert m.params < 2_000_000 and m.table("word").vocab == 10_000


def test_unknown_model_names_it_and_lists_known():
    with pytest.raises(InputError) as exc:
        load_model("resnet-50")
    msg = str(exc.value)
    assert "resnet-50" in msg and "bert-base" in msg and "llama3-8b" in msg


@pytest.mark.parametrize("name, first", [("ncf", "ncf-ml20m"), ("transformer", "transformer-wmt"),
                                         ("wide-deep", "wide-deep-outbrain"), ("gpt-2", "gpt2"),
                                         ("llama-3-8b", "llama3-8b")])
def test_an_unknown_name_suggests_the_nearest_zoo_models(name, first):
    with pytest.raises(InputError, match=rf"unknown model '{name}' \(did you mean {first}\b"):
        load_model(name)


def test_a_spelling_variant_is_the_same_zoo_model():
    assert load_model("BERT_Large").name == "bert-large"


@pytest.mark.parametrize("bad", [0, -3, 2.5, True])
def test_bad_batch_rejected(bad):
    with pytest.raises(InputError, match="batch"):
        load_model("tiny-lm", batch=bad)


def test_load_by_path_and_determinism():
    from embsim.workload import ZOO_DIR
    assert load_model(str(ZOO_DIR / "gnmt.yaml")) == load_model("gnmt")


def test_wide_deep_tables_are_the_dle_feature_spec():
    """DLE TF2 WideAndDeep (README "Default configuration"): 16 categorical features, each a
    deep table and a dim-1 wide table of the same cardinality; deep dims 1235 in all, 3
    multi-hot features of hotness 3; the deep MLP reads the 1235 + 13 numerics."""
    m = load_model("wide-deep-outbrain")
    deep = [t for t in m.tables if t.dim > 1]
    wide = {t.name: t for t in m.tables if t.dim == 1}
    assert len(deep) == 16 and len(wide) == 16
    assert sum(t.dim for t in deep) == 1235
    for t in deep:
        assert wide[t.name + "_wide"].vocab == t.vocab
        assert wide[t.name + "_wide"].lookups_per_sample == t.lookups_per_sample
    assert sorted(t.name for t in deep if t.lookups_per_sample == 3) == [
        "category_id_list", "entity_id_list", "topic_id_list"]
    assert m.layer("deep_hidden0").kind == "linear"
    assert m.layer("deep_hidden0").params == (1235 + 13) * 1024 + 1024


def test_dlrm_dcnv2_mlperf_is_the_mlcommons_reference():
    """MLCommons training recommendation_v2/torchrec_dlrm (README "Run the MLPerf DLRM v2
    benchmark"): 26 tables of dim 128 with the 40M-row cap, bags of --multi_hot_sizes
    (214 ids a sample), a 13-512-256-128 dense arch, a 3-layer low-rank (512) cross net over
    the 27 x 128 = 3456 concat, a 3456-1024-1024-512-256-1 over arch, Adagrad, FP32."""
    m = load_model("dlrm-dcnv2-mlperf")
    hot = [3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1]
    vocab = [40000000, 39060, 17295, 7424, 20265, 3, 7122, 1543, 63, 40000000, 3067956,
             405282, 10, 2209, 11938, 155, 4, 976, 14, 40000000, 40000000, 40000000, 590152,
             12973, 108, 36]
    assert [t.vocab for t in m.tables] == vocab
    assert [t.lookups_per_sample for t in m.tables] == hot and sum(hot) == 214
    assert all(t.dim == 128 for t in m.tables)
    # the same tables as TorchRec's README "MLPerf" row: 97.36 GiB of FP32 rows
    assert round(m.embedding_params * 4 / 2**30, 2) == 97.36
    # dense 171,392 + cross 3 x (2 x 3456 x 512 + 3456) + over arch 5,245,953
    assert m.dense_params == 16_044_545
    assert m.layer("cross0_v").params == 3456 * 512             # V: no bias
    assert m.layer("cross0_w").params == 512 * 3456 + 3456      # W + the layer's bias
    assert m.layer("over_arch0").params == 3456 * 1024 + 1024
    assert m.batch == 8192 and m.dtype == "fp32"
    assert m.optimizer.name == "adagrad" and m.optimizer.implementation == "per-tensor"

"""Held-out PyTorch DLRM, the eight-GPU "large" (FL=3) rows of heldout/dle-pytorch-dlrm.yaml on
zoo dlrm-criteo-t3 (added by s8-dlrm 2026-12-02, nothing fitted on them). Here: the rows'
mapping, the model's provenance and cross-checks against the README. Simulating them samples
178M rows of token statistics: .ci/run gates the whole file."""

from pathlib import Path

import yaml

from embsim.validate.training import heldout_files
from embsim.workload import ZOO_DIR, load_model
from embsim.workload.spec import load_model_spec

GIB = 2 ** 30


def _doc() -> dict:
    files = [f for f in heldout_files() if f.endswith("dle-pytorch-dlrm.yaml")]
    assert len(files) == 1
    return yaml.safe_load(Path(files[0]).read_text())


def test_large_rows_are_simulated_on_the_t3_model_with_the_readme_batch():
    doc = _doc()
    large = [r for r in doc["runs"] if r["model_size"] == "large"]
    assert len(large) == 4 and all(r["gpus"] == 8 for r in large)
    for r in large:
        assert "not_simulated" not in r and r["batch_per_gpu"] == "8k"
        e = r["embsim"]
        assert e["model"] == "dlrm-criteo-t3" and e["batch"] == 8192
        assert e["topology"].endswith(":1x8")
        assert e["topology"].startswith("dgx-a100" if "A100" in r["system"] else "dgx1-v100")
    # the small rows keep the file's default model; the strategy stays embrace for all
    assert doc["embsim_defaults"]["model"] == "dlrm-criteo-f15"
    assert doc["embsim_defaults"]["strategy"] == "embrace"
    assert "s8-dlrm (2026-12-02)" in doc["note"] and "nothing fitted" in doc["note"]


def test_t3_cardinalities_are_the_tf2_criteo_t3_lists():
    # the same Spark preprocessing in both examples (zoo file's source): equal tables
    pt, tf2 = load_model("dlrm-criteo-t3"), load_model("dlrm-tf2-criteo-t3")
    assert [(t.name, t.vocab, t.dim) for t in pt.tables] == [(t.name, t.vocab, t.dim) for t in tf2.tables]
    assert pt.embedding_params == 177_944_291 * 128


def test_readme_checkpoint_sizes_are_one_fraction_of_both_models_tables():
    # README "Model checkpoint size": 15.0 (FL=15) and 81.9 (FL=3), one decimal; the FP32
    # tables of the two zoo models must be the same multiple of them within that rounding
    def ratio_range(published, model):
        tables = load_model(model).embedding_params * 4 / GIB
        return (published - 0.05) / tables, (published + 0.05) / tables
    lo_small, hi_small = ratio_range(15.0, "dlrm-criteo-f15")
    lo_large, hi_large = ratio_range(81.9, "dlrm-criteo-t3")
    assert max(lo_small, lo_large) <= min(hi_small, hi_large)


def test_layers_are_the_small_models_except_the_distributed_embedding():
    small = load_model_spec(ZOO_DIR / "dlrm-criteo-f15.yaml")
    large = load_model_spec(ZOO_DIR / "dlrm-criteo-t3.yaml")
    dense = lambda spec: [(l.name, l.kind, l.params) for l in spec.layers if l.kind != "embedding"]
    assert dense(large) == dense(small)
    emb = [l for l in large.layers if l.kind == "embedding"]
    assert [l.params["table"] for l in emb] == [t.name for t in large.tables]
    # joint_sparse gathers in FP32 and DlrmBottom casts after it: a cast, not a fused one
    assert all(l.params.get("cast_output") and not l.params.get("fused_cast") for l in emb)
    assert large.optimizer == small.optimizer == "sgd"
    assert large.batch == small.batch // 8

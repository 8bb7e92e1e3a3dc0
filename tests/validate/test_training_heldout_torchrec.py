"""Held-out TorchRec DLRM throughput on AWS p4d.24xlarge (pytorch/torchrec
examples/dlrm/README.MD "Preliminary Training Results" at 488c02b0): every row (3; MLPerf on
8 GPUs, MLPerfx2 on 16, Full Size on 80; Train Records/Second), zoo dlrm-torchrec-criteo with
each row's --num_embeddings_per_feature, strategy embrace shard=tables standing for TorchRec's
default planner's TW/CW/DP plan, aws-p4d:Nx8. Selection rule, mapping and expected biases
committed before the first simulation (commit 2ca731e); nothing fitted or chosen on them.

Bounds: the first simulation (branch torchrec, 2026-12-04) x1.005 rounded up: mean |error|
325.85 %, max 748.49 % (Full Size, 80 GPUs); every run simulated fast (+117 %, +112 %,
+748 %). A change that moves these runs further off fails here; one that brings them closer
must tighten the bounds.
MOVED 2026-12-06 (thirty-first session): the zoo model says framework torchrec, its tables'
backward and EXACT_SGD step FBGEMM's fused table-batched embedding backward
(embsim.workload.fbgemm_tbe) instead of ATen's per-lookup index_add: mean 313.96 % -> 323.54 %,
max 712.83 % -> 731.62 % (every row a little faster; the figures before it are HEAD 507d143's,
the first contact's having moved since); bounds at x1.005 of the new figures, nothing tuned."""

from pathlib import Path

import yaml

from embsim.validate.training import HELDOUT_DIR
from heldout_bounds import assert_within, heldout_fixture

FILE = "torchrec-dlrm-p4d.yaml"
MEAN_BOUND, MAX_BOUND = 3.2517, 7.3528
# README.MD: --num_embeddings_per_feature of each row, DEFAULT_CAT_NAMES order
ROWS = {
    8: (8192, "40000000,39060,17295,7424,20265,3,7122,1543,63,40000000,3067956,405282,10,2209,"
              "11938,155,4,976,14,40000000,40000000,40000000,590152,12973,108,36", 97.36),
    16: (4096, "80000000,39060,17295,7424,20265,3,7122,1543,63,80000000,3067956,405282,10,2209,"
               "11938,155,4,976,14,80000000,40790948,80000000,590152,12973,108,36", 174.03),
    80: (819, "227605432,39060,17295,7424,20265,3,7122,1543,63,130229467,3067956,405282,10,"
              "2209,11938,155,4,976,14,292775614,40790948,187188510,590152,12973,108,36", 420.94),
}

torchrec = heldout_fixture("/" + FILE)


def test_file_has_full_provenance_and_its_selection_rule():
    doc = yaml.safe_load((Path(HELDOUT_DIR) / FILE).read_text())
    assert "selection rule" in doc["note"].lower()
    runs = doc["runs"]
    assert len(runs) == 3 and len({r["id"] for r in runs}) == 3
    zoo = yaml.safe_load((Path(HELDOUT_DIR).parents[2] / "workload" / "zoo" / "dlrm-torchrec-criteo.yaml").read_text())
    base = {t["name"]: t["vocab"] for t in zoo["tables"]}
    assert all(t["dim"] == 128 for t in zoo["tables"])
    defaults = doc["embsim_defaults"]
    assert defaults["model"] == "dlrm-torchrec-criteo" and defaults["strategy"] == "embrace"
    for r in runs:
        src, sim = r["source"], r["embsim"]
        assert src["repo"] == "pytorch/torchrec" and src["path"] == "examples/dlrm/README.MD"
        assert len(src["commit"]) == 40 and src["commit"] in src["url"] and src["url"].startswith("https://github.com/")
        batch, rows, gib = ROWS[r["gpus"]]
        assert sim["batch"] == r["batch_per_gpu"] == batch
        assert sim["topology"] == f"aws-p4d:{r['gpus'] // 8}x8" and r["nodes"] == r["gpus"] // 8
        # the zoo defaults with the run's table overrides are the README row's cardinalities
        vocab = {**base, **{k: v["vocab"] for k, v in sim.get("tables", {}).items()}}
        assert [vocab[f"t_cat_{i}"] for i in range(26)] == list(map(int, rows.split(",")))
        # ... and their FP32 size the README's "Collective Size of Embedding Tables (GiB)"
        assert round(sum(vocab.values()) * 128 * 4 / 2**30, 2) == r["table_gib"] == gib


def test_torchrec_within_the_first_measured_level(torchrec):
    assert_within(*torchrec, counts={"simulated_runs": 3, "pairs": 0, "skipped": 0},
                  mean=MEAN_BOUND, max_=MAX_BOUND)


def test_every_row_simulates_fast(torchrec):
    # the first contact's shape: all three fast, the 80-GPU row by far the most
    runs, _ = torchrec
    err = {r.gpus: r.error for r in runs}
    assert all(e > 0 for e in err.values()) and err[80] > 3 * max(err[8], err[16])

"""Held-out NVIDIA Merlin distributed-embeddings synthetic-model step times on DGX A100
(NVIDIA-Merlin/distributed-embeddings examples/benchmarks/synthetic_models/README.md
"Preliminary Benchmark Results" at c6b2e2f5): every cell (14; Tiny / Small / Medium / Large /
Jumbo on 1-128 GPUs, global batch 65536, Adagrad), zoo merlin-synthetic-* generated from the
repository's config_v3.py, strategy embrace shard=tables with DE's memory_balanced placement
and column slicing, model-parallel input. Selection rule, mapping and expected biases
committed before the first simulation; nothing fitted or chosen on them.

Bounds: first contact (branch merlin, 2026-12-04) 150.69 % mean, 557.64 % max (Tiny on one
GPU), scaling 0.313; then Keras Adagrad's tf.unique dedup was built from TensorFlow's source
(the zoo's sparse_dedup: tf-unique; nothing fitted): x1.005 of those second figures, rounded
up: mean 57.12 %, max 172.10 %, scaling 0.144 (Tiny 1 -> 8); every run still fast. .ci/run
gates the same bounds."""

from pathlib import Path

import yaml

from embsim.validate.training import HELDOUT_DIR
from heldout_bounds import assert_within, heldout_fixture

FILE = "merlin-de-synthetic.yaml"
MEAN_BOUND, MAX_BOUND, SCALING_BOUND = 0.5741, 1.7297, 0.1451
README_MS = {("Tiny", 1): 24.433, ("Tiny", 8): 5.537, ("Tiny", 16): 4.867, ("Small", 1): 67.355,
             ("Small", 8): 17.203, ("Small", 16): 12.461, ("Small", 32): 11.839, ("Medium", 8): 63.393,
             ("Medium", 16): 46.636, ("Medium", 32): 37.732, ("Medium", 128): 27.329,
             ("Large", 32): 67.57, ("Large", 128): 37.934, ("Jumbo", 128): 124.3}

merlin = heldout_fixture("/" + FILE)


def test_every_readme_cell_once_with_its_rate_batch_and_topology():
    doc = yaml.safe_load((Path(HELDOUT_DIR) / FILE).read_text())
    assert "selection rule" in doc["note"].lower()
    runs = doc["runs"]
    assert {(r["model_size"], r["gpus"]): r["iteration_ms"] for r in runs} == README_MS
    assert len(runs) == len(README_MS) == len({r["id"] for r in runs})
    for r in runs:
        src, sim = r["source"], r["embsim"]
        assert src["repo"] == "NVIDIA-Merlin/distributed-embeddings" and src["commit"] in src["url"]
        assert abs(r["value"] - 65536 / (r["iteration_ms"] / 1000)) < 0.06      # the global batch per second
        assert sim["batch"] * r["gpus"] == 65536
        assert sim["topology"] == f"dgx-a100:{max(1, r['gpus'] // 8)}x{min(8, r['gpus'])}"
        assert sim["model"] == f"merlin-synthetic-{r['model_size'].lower()}"
    opts = doc["embsim_defaults"]["options"]
    assert opts == {"shard": "tables", "placement": "memory_balanced",
                    "column_slice_threshold": 1280 * 1048576, "input": "model"}


def test_merlin_within_the_first_measured_level(merlin):
    assert_within(*merlin, counts={"simulated_runs": 14, "pairs": 9, "skipped": 0},
                  mean=MEAN_BOUND, max_=MAX_BOUND, scaling=SCALING_BOUND)
    runs, _ = merlin
    assert all(r.error > 0 for r in runs)          # every run still fast

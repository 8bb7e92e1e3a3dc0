"""Held-out DLRM throughput of HugeCTR's Sparse Operation Kit under TensorFlow 2 + Horovod
(NVIDIA-Merlin/HugeCTR sparse_operation_kit/documents/tutorials/DLRM_Benchmark/README.md at
025c6c14): every row of its 8 x A100 and 8 x V100 tables (8 runs), zoo dlrm-tf2-criteo-t3
with the MLPerf Criteo Terabyte cardinalities, embrace shard=hashed exchange=fused (SOK's one
fused table, keys to GPU key % 8), dedup on the --compress rows. Selection rule and mapping
in the file's note; nothing fitted or chosen on them.

Bounds: x1.005 rounded up of the level reached on 2026-12-05, 13.15 % mean, 32.64 % max (A100
FP32 compress at batch 55296, +33 %). Not blind any more: first contact with the fused
row-sharded exchange 12.85 / 21.37 % (with the dedup expansion); then SOK's count exchange and
row reorder (its dispatchers' code) 14.2 / 23.4; then the AMP rows' FP16 wire, a mapping read
from SOK's dense_gather / All2AllOutput registration after the first contact: 8.27 / 19.10;
then the owners' lookup, scatter and update over the distinct rows they receive (what SOK's
owners do with --compress): 13.15 / 32.64, the compress rows further off. Its shape: the
--compress (dedup) rows simulate fast, +10..+13 % on V100, +32..+33 % on A100. A change that
moves them further off fails here; one that brings them closer must tighten the bounds."""

from pathlib import Path

import yaml

from embsim.validate.training import HELDOUT_DIR
from heldout_bounds import assert_within, heldout_fixture

FILE = "sok-dlrm-criteo.yaml"
MEAN_BOUND, MAX_BOUND = 0.1322, 0.3281
# the MLPerf Criteo Terabyte cardinalities (40M-row cap), facebookresearch/dlrm tools/visualize.py
MLPERF = [39884406, 39043, 17289, 7420, 20263, 3, 7120, 1543, 63, 38532951, 2953546, 403346, 10, 2208,
          11938, 155, 4, 976, 14, 39979771, 25641295, 39664984, 585935, 12972, 108, 36]

sok = heldout_fixture("/" + FILE)


def test_file_has_full_provenance_and_the_readme_rows():
    doc = yaml.safe_load((Path(HELDOUT_DIR) / FILE).read_text())
    assert "selection rule" in doc["note"].lower()
    runs, defaults = doc["runs"], doc["embsim_defaults"]
    assert len(runs) == 8 and len({r["id"] for r in runs}) == 8
    assert defaults["model"] == "dlrm-tf2-criteo-t3" and defaults["strategy"] == "embrace"
    assert defaults["options"] == {"shard": "hashed", "exchange": "fused", "input": "data"}
    assert [defaults["tables"][f"cat_{i}"]["vocab"] for i in range(26)] == MLPERF
    for r in runs:
        src, sim = r["source"], r["embsim"]
        assert src["repo"] == "NVIDIA-Merlin/HugeCTR" and len(src["commit"]) == 40
        assert src["commit"] in src["url"] and src["url"].startswith("https://github.com/")
        # the README row, copied whole: batch, ..., amp, compress, ..., throughput
        cells = [c.strip() for c in r["row"].split("|")]
        assert int(cells[0]) == r["global_batch"] == 8 * sim["batch"]
        amp, compress = cells[5] == "yes", cells[6] == "yes"
        assert amp != compress                      # the README's two configurations
        assert round(float(cells[-1].rstrip("M")) * 1e6) == r["value"]
        assert sim.get("options", {}).get("dedup", False) == compress
        # SOK exchanges the rows in the layer's compute dtype: FP16 under AMP
        assert sim.get("options", {}).get("alltoall_dtype", "table") == ("compute" if amp else "table")
        assert sim["dtype"] == ("fp16" if amp else "tf32" if "a100" in r["id"] else "fp32")


def test_sok_within_the_first_measured_level(sok):
    assert_within(*sok, counts={"simulated_runs": 8, "pairs": 0, "skipped": 0},
                  mean=MEAN_BOUND, max_=MAX_BOUND)


def test_the_compress_rows_simulate_fast(sok):
    # the remaining shape (reported, not explained): every dedup'd FP32 row is fast, the A100
    # ones the most; every AMP row within 9 %
    runs, _ = sok
    err = {r.id: r.error for r in runs}
    assert all(err[f"{g}-fp32-compress-b{b}"] > 0.05 for g in ("a100", "v100") for b in (65536, 55296))
    assert all(err[f"a100-fp32-compress-b{b}"] > 0.25 for b in (65536, 55296))
    assert all(abs(e) < 0.09 for rid, e in err.items() if "amp" in rid)

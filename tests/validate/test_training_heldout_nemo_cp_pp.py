"""Held-out context parallelism inside an interleaved pipeline (NVIDIA/NeMo/docs/source/
performance/performance_summary.md, DGX-H100 FP8, NeMo 24.07: LLAMA3-70B TP 4 PP 4 CP 2 VP 5 on
64 GPUs, three published values), simulated with --context-parallel 2 and --pipeline-parallel 4
--virtual-pipeline 5 together (TE's p2p KV ring in every stage); no constant fitted on it."""

import yaml

from heldout_bounds import assert_within, heldout_fixture, slow_heldout
from embsim.validate.training import HELDOUT_DIR

# Set 2026-12-03 (twelfth session, the lead) at the level first reached x1.005: the first
# simulation gave 1,509.8 tokens/s/GPU against 1,533 / 1,549 / 1,524 measured, -1.5 / -2.5 /
# -0.9 %, mean 1.66 %, max 2.53 % (the file's stated expectation: near nemo-vp.yaml's
# LLAMA2-70B row).
# LOOSENED 2026-12-06 (kernel model: the output layer's GEMMs at the BF16 rate under fp8, as
# Megatron-Core's plain ColumnParallelLinear runs them; workload.kernels_layers.
# output_layer_16bit) 0.0167 / 0.0255 -> 0.0376 / 0.0462: the LM head on the last pipeline stage
# is slower, 1,509.8 -> 1,477.8 tokens/s/GPU, -3.6 / -4.6 / -3.0 % (exact 0.03741 / 0.04594),
# x1.005. The fix is read from the source, not fitted; the earlier level had the head too fast.
# TIGHTENED 2026-12-06 (thirtieth session, 815db18: FP8 TP all-gathers) -> 0.0069 / 0.0147 (exact
# 0.00682 / 0.01457), x1.005.
MEAN_BOUND, MAX_BOUND = 0.0069, 0.0147
# One simulation of the row (64 GPUs, 64 micro-batches x 5 chunks with a CP ring per block)
# takes several minutes: the bound is checked here only with EMBSIM_SLOW_HELDOUT=1, and
# always by .ci/run's gate (the same bounds).
SLOW = slow_heldout(8)
FILE = "nemo-cp-pp.yaml"
errors = heldout_fixture(FILE)


@SLOW
def test_nemo_cp_pp_heldout_within_the_achieved_bounds(errors):
    runs, pairs = errors
    assert_within(runs, pairs, counts={"simulated_runs": 3, "pairs": 0, "skipped": 0},
                  mean=MEAN_BOUND, max_=MAX_BOUND)
    for run in runs:
        assert "(TE p2p ring, load-balanced causal)" in run.compute_source
        assert " virtual (interleaved 1F1B, " in run.compute_source


def test_the_file_states_its_rule_and_maps_every_selected_row():
    doc = yaml.safe_load((HELDOUT_DIR / FILE).read_text())
    assert "selection rule" in doc["note"].lower()
    assert doc["source"]["repo"] == "NVIDIA/NeMo" and doc["source"]["commit"] in doc["source"]["url"]
    d = doc["embsim_defaults"]
    assert d["amp"] == "megatron" and d["layers"]["decoder"]["flash_attention"] == "fa2"
    assert sorted(r["value"] for r in doc["runs"]) == [1524, 1533, 1549]
    for r in doc["runs"]:
        assert (r["tp"], r["pp"], r["cp"], r["vp"]) == (d["tensor_parallel"], d["pipeline_parallel"],
                                                        d["context_parallel"], d["virtual_pipeline"])
        # GBS = DP x MBS x micro-batches, DP = GPUs / (TP x PP x CP)
        assert r["gpus"] // (r["tp"] * r["pp"] * r["cp"]) * r["micro_batch"] * d["accumulate"] == r["global_batch"]
        assert d["scale"] * r["gpus"] == 1

"""Held-out pipeline-parallel NeMo row (NVIDIA/NeMo/docs/source/performance/performance_summary.md,
"Long Input Sequences", DGX-H100 FP8: LLAMA2-7B at 8K on 8 GPUs, TP 1 PP 2 CP 1 VP 1 DP 4,
GBS 512, MBS 1), simulated with --pipeline-parallel 2 over 128 micro-batches; no constant
fitted on it. The rows with interleaved virtual stages are listed, not simulated."""

import yaml

from heldout_bounds import assert_within, heldout_fixture
from embsim.validate.training import HELDOUT_DIR

# Set 2026-12-03 (s11-pp) at the level first reached x1.005: the first simulation gave
# 15,213 tokens/s/GPU against 13,907 measured, +9.39 % (mean = max over the one row); after
# the fix that names each stage's gradient buckets apart (the two stages' bucket0.. had
# shared one collective), 15,209, +9.36 %. The bound stays at the first contact's.
# 2026-12-03 (ninth session): strategy distopt (the mapping change is stated in the file):
# +9.36 -> +9.54 %, LOOSENED 0.0944 -> 0.0960.
# TIGHTENED 2026-12-03 (twelfth session, the lead) 0.0960 -> 0.0163: two mapping corrections read from
# the NeMo launcher, stated in the file: its config.yaml set NVTE_FUSED_ATTN 0 for releases
# 24.01-24.07 (FlashAttention-2, not cuDNN), and its configs run megatron_amp_O2 (amp megatron,
# FP32 gradient reduction): +9.54 % -> +1.62 % (FlashAttention-2 alone -4.3 %); x1.005.
MEAN_BOUND, MAX_BOUND = 0.0163, 0.0163
FILE = "nemo-pp.yaml"
errors = heldout_fixture(FILE)


def test_nemo_pp_heldout_within_the_achieved_bounds(errors):
    runs, pairs = errors
    assert_within(runs, pairs, counts={"simulated_runs": 1, "pairs": 0, "skipped": 7},
                  mean=MEAN_BOUND, max_=MAX_BOUND)
    for run in runs:
        if run.simulated is not None:
            assert "pipeline parallel 2 (1F1B, 128 micro-batches): bubble" in run.compute_source


def test_the_file_states_its_rule_and_lists_interleaved_rows_as_not_simulated():
    doc = yaml.safe_load((HELDOUT_DIR / FILE).read_text())
    assert "selection rule" in doc["note"].lower()
    assert doc["source"]["repo"] == "NVIDIA/NeMo" and doc["source"]["commit"] in doc["source"]["url"]
    simulated = [r for r in doc["runs"] if "not_simulated" not in r]
    assert simulated and all(r["pp"] > 1 and r["cp"] == 1 and r["vp"] == 1 for r in simulated)
    assert all(r["embsim"]["pipeline_parallel"] == r["pp"] for r in simulated)
    skipped = [r["not_simulated"] for r in doc["runs"] if "not_simulated" in r]
    assert all("interleaved virtual stages" in s for s in skipped)

"""Held-out interleaved-pipeline Megatron-Bridge rows (NVIDIA-NeMo/Megatron-Bridge
Megatron-Bridge/docs/performance-summary-archive.md at 067f987, DGX-H100: LLAMA3_70B pre-training FP8 on 64
GPUs TP 4 PP 8 VP 5 at GBS 256 (26.04.01) and GBS 128 (25.11), LLAMA3_70B SFT FP8 on 32 GPUs
TP 4 PP 4 VP 5 (26.06)), simulated with --virtual-pipeline 5 and strategy distopt, zoo
llama3-70b; no constant fitted on them. LLAMA3.1_405B (TP 8 PP 8 CP 2 VP 8, two
configurations) is listed, not simulated."""

import pytest
import yaml

from heldout_bounds import assert_within, heldout_fixture, slow_heldout
from embsim.validate.training import HELDOUT_DIR
from embsim.workload import load_model

# Set 2026-12-03 (s13-mbpp) at the level first reached x1.005 (exact: mean 0.08857, max
# 0.11439 by --json): the first simulation gave mean |error| 8.9 %, max 11.4 % (GBS 256 1,521
# against 1,664 tokens/s/GPU -8.6 %, GBS 128 1,497 against 1,602 -6.6 %, SFT 1,451 against
# 1,638 -11.4 %: all simulated slow, as the file expected before simulating).
# TIGHTENED 2026-12-03 (twelfth session) 0.0891 / 0.1150 -> 0.0107 / 0.0180: every row re-mapped to
# amp megatron with BF16 gradient reduction (stated in the file): 8.86 / 11.44 % -> 1.06 / 1.78 %
# (exact 0.01062 / 0.01784; GBS 256 -1.8 %, GBS 128 +0.4 %, SFT +1.0 %), x1.005.
# LOOSENED 2026-12-06 (kernel model: the output layer's GEMMs at the BF16 rate under fp8, as
# Megatron-Core's plain ColumnParallelLinear runs them; workload.kernels_layers.
# output_layer_16bit) 0.0107 / 0.0180 -> 0.0386 / 0.0619: the LM head on the last pipeline stage
# costs about twice what the FP8 rate gave it, every row slower: GBS 256 -1.8 -> -6.2 %, GBS 128
# +0.4 -> -4.0 %, SFT +1.0 -> -1.3 % (exact 0.03833 / 0.06159), x1.005. The fix is read from
# the source, not fitted; the rows' earlier level had the head too fast.
# TIGHTENED 2026-12-06 (thirtieth session, 815db18: FP8 TP all-gathers) -> 0.0260 / 0.0451 (exact
# 0.02585 / 0.04484), x1.005.
MEAN_BOUND, MAX_BOUND = 0.0260, 0.0451
# The three rows took 600 s to simulate (two shared cores; 64 GPUs x 128 and 64 micro-batches
# x 5 chunks, 32 GPUs x 16 x 5), at the suite's 600 s per-test timeout: the bound is checked
# here only with EMBSIM_SLOW_HELDOUT=1, and always by .ci/run's gate (the same bounds).
SLOW = slow_heldout(10)
FILE = "megatron-bridge-pp.yaml"
errors = heldout_fixture(FILE)


@SLOW
def test_megatron_bridge_pp_heldout_within_the_achieved_bounds(errors):
    runs, pairs = errors
    assert_within(runs, pairs, counts={"simulated_runs": 3, "pairs": 0, "skipped": 2},
                  mean=MEAN_BOUND, max_=MAX_BOUND)
    for run in runs:
        if run.simulated is not None:
            assert " virtual (interleaved 1F1B, " in run.compute_source


def test_the_file_states_its_rule_and_maps_every_selected_row():
    doc = yaml.safe_load((HELDOUT_DIR / FILE).read_text())
    assert "selection rule" in doc["note"].lower()
    assert doc["source"]["repo"] == "NVIDIA-NeMo/Megatron-Bridge"
    assert doc["source"]["commit"] in doc["source"]["url"]
    simulated = [r for r in doc["runs"] if "not_simulated" not in r]
    assert len(simulated) == 3
    for r in doc["runs"]:
        # the row's value is its newest release's, the others are drift
        assert r["release_drift"][r["release"]] == r["value"]
        assert r["system"] == "DGX-H100" and r["pp"] > 1
        assert ("not_simulated" in r) is (r["cp"] > 1)
    for r in simulated:
        e = r["embsim"]
        assert (e["pipeline_parallel"], e["virtual_pipeline"], e["tensor_parallel"]) == (
            r["pp"], r["vp"], r["tp"])
        # GBS = DP x MBS x micro-batches, DP = GPUs / (TP x PP x CP)
        assert r["gpus"] // (r["tp"] * r["pp"] * r["cp"]) * r["micro_batch"] * e["accumulate"] == r["global_batch"]
        assert e["batch"] == r["micro_batch"] and e["seq"] == r["seq"] and e["scale"] * r["gpus"] == 1
        assert e["topology"] == f"dgx-h100:{r['gpus'] // 8}x8"
        # the release's Megatron-Core: 260cba7 (the send waited at once) is in 26.06's only
        assert e["p2p_send_wait"] == ("immediate" if r["release"] == "26.06" else "deferred")
        assert e.get("p2p_overlap", True) is True


def test_zoo_llama3_70b_has_the_providers_shapes():
    from embsim.workload import ZOO_DIR
    spec = yaml.safe_load((ZOO_DIR / "llama3-70b.yaml").read_text())
    decoder = next(layer for layer in spec["layers"] if layer["name"] == "decoder")
    assert (decoder["repeat"], decoder["dim"], decoder["ffn"], decoder["heads"], decoder["kv_heads"]) == (
        80, 8192, 28672, 64, 8)
    m = load_model("llama3-70b")
    assert m.table("word").vocab == 128256 and m.table("word").tied_to is None
    assert sum(layer.kind == "transformer_decoder" for layer in m.layers) == 80
    assert abs(m.params / m.published["params"] - 1) <= 0.02

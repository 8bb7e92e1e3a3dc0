"""Under --dtype fp8 a block's tensor-parallel all-gathers move FP8 (engine/tp_plan.py,
workload/fp8_comm.py): 1 byte per element; its reduce-scatters, the output layer's and the
embedding's gathers and the no-sequence-parallel all-reduces stay 16-bit."""

from embsim.engine.config import SimulationConfig
from embsim.engine.run import simulate

BASE = dict(model="gpt2", topology="dgx-h100:1x8", batch=4, seq=1024, iterations=2,
            efficiency_baseline=False)
ACT = 4 * 1024 * 768 * 2          # batch x seq x hidden, 16-bit


def tp_comms(result):
    return {(c.name, c.op): c.nbytes for c in result.run.comm
            if c.iteration == 1 and c.name.startswith("tp:")}


def run(dtype, **kw):
    return simulate(SimulationConfig(**BASE, dtype=dtype, tensor_parallel=2, **kw))


def test_block_all_gathers_halve_and_reduce_scatters_do_not():
    fp8, bf16 = tp_comms(run("fp8")), tp_comms(run("bf16"))
    assert fp8.keys() == bf16.keys()
    block = {k: v for k, v in fp8.items() if ":decoder.3:" in k[0]}
    assert sorted(op for _, op in block) == ["all_gather"] * 6 + ["reduce_scatter"] * 4
    for (name, op), nbytes in block.items():
        assert bf16[(name, op)] == ACT
        assert nbytes == (ACT / 2 if op == "all_gather" else ACT), (name, op)


def test_output_layer_and_embedding_gathers_stay_16_bit():
    fp8 = tp_comms(run("fp8"))
    assert fp8[("tp:pre:lm_head:0", "all_gather")] == ACT
    assert fp8[("tp:bwd:token_embedding:0", "all_gather")] == ACT
    assert fp8[("tp:bwd:lm_head:0", "reduce_scatter")] == ACT


def test_the_output_says_so_only_where_it_happens():
    note = "blocks' all-gathers in FP8, 1 byte per element"
    assert note in run("fp8").compute_source
    assert note not in run("bf16").compute_source
    # without sequence parallelism the blocks all-reduce their 16-bit outputs: unchanged
    plain = run("fp8", sequence_parallel=False)
    assert note not in plain.compute_source
    comms = tp_comms(plain)
    assert {v for k, v in comms.items() if ":decoder.3:" in k[0]} == {ACT}

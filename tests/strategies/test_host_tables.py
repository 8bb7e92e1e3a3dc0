"""allgather --option table_device=cpu (strategies/host_tables.py): tables in host memory as
TF <= 2.5's Keras Embedding places them. The bytes every link carries, the timeline order
(the host lookup lands before its layer's forward, the gradient rows leave after its
backward), HBM freed of the tables, refusals, determinism, and the default unchanged."""

import numpy as np
import pytest

from embsim.engine.context import table_traffic
from embsim.engine.run import SimulationConfig, simulate
from embsim.errors import InputError
from embsim.plan.names import bwd_name, fwd_name
from embsim.strategies.allgather import AllGatherStrategy
from embsim.strategies.host_tables import COPY_PASSES, FUSION_PASSES, GATHER_PASSES
from embsim.topology import load_topology
from embsim.topology.build import tree_offsets
from embsim.workload import load_model
from embsim.workload.tokens import TokenStats

MODEL = "embsim/validation_data/rankings/models/oe-wdl-criteo-9.yaml"
TOPO = "embsim/validation_data/rankings/topologies/openembedding-t4-server.yaml"
BATCH = 512
ITER = 3


def run(gpus: int, **options):
    return simulate(SimulationConfig(topology=f"{TOPO}:1x{gpus}", model=MODEL, batch=BATCH,
                                     strategy="allgather", strategy_options=options,
                                     iterations=ITER, efficiency_baseline=False))


@pytest.fixture(scope="module")
def one():
    return run(1, gather_rows="lookups", table_device="cpu")


@pytest.fixture(scope="module")
def two():
    return run(2, gather_rows="lookups", table_device="cpu")


def step_bytes(r) -> np.ndarray:
    """Bytes every link carried in the last iteration."""
    at = r.run.link_bytes_at
    return at[ITER - 1] - at[ITER - 2]


def expected_host_work(model, n: int) -> float:
    """Host memory bytes of one step on the node, from the mechanism's own passes."""
    tables = table_traffic(model, n, lambda t: TokenStats.zipf(t.vocab, SimulationConfig().zipf_s))
    state = model.optimizer.state_bytes_per_param
    total = 0.0
    for t in tables.values():
        row = t.dim * model.table_bytes
        pair = model.row_bytes(t.table)
        gather = n * GATHER_PASSES * BATCH * row
        landed = n * BATCH * pair                           # the D2H rows written into host memory
        # MPI's copies of the peers' rows, Horovod's fusion buffer in (own) and out (all n);
        # one process skips the collective
        copies = n * (COPY_PASSES * (n - 1) + FUSION_PASSES * (1 + n)) * BATCH * pair if n > 1 else 0.0
        dedup = n * (n * BATCH * row + t.unique_union * row)
        apply = n * t.unique_union * (3 * row + 2 * state * t.dim)
        total += gather + landed + copies + dedup + apply
    return total


def test_each_link_carries_the_lookup_the_gradient_rows_and_the_host_work(one):
    model = load_model(MODEL, batch=BATCH)
    strategy = AllGatherStrategy.from_options({"table_device": "cpu"})
    topo = strategy.topology(load_topology(f"{TOPO}:1x1"))
    t, root = topo._template, topo.servers.root
    carried = step_bytes(one)
    pull = sum(BATCH * tb.dim * model.table_bytes for tb in model.tables)     # activations in
    push = sum(BATCH * model.row_bytes(tb.name) for tb in model.tables)       # (index, row) pairs out
    up, down = tree_offsets(t, "gpu0", root), tree_offsets(t, root, "gpu0")
    assert set(up).isdisjoint(down)
    for o in up:
        assert carried[o] == pytest.approx(push, rel=1e-9)
    for o in down:
        assert carried[o] == pytest.approx(pull, rel=1e-9)
    cpu = topo.link_ids_of_kind("host-mem")
    assert len(cpu) == 1
    assert carried[cpu[0]] == pytest.approx(expected_host_work(model, 1), rel=1e-9)
    # nothing else moves: one GPU, no NCCL collective
    others = np.setdiff1d(np.arange(carried.size), np.concatenate([up, down, cpu]))
    assert carried[others].sum() == 0
    assert set(one.comm_bytes_per_gpu) == {"host_allgather", "host_lookup"}


def test_two_gpus_allgather_through_host_memory_not_nccl(two):
    model = load_model(MODEL, batch=BATCH)
    # the tables' allgather left the NCCL path: only the dense layers are AllReduced
    assert "all_gather" not in two.comm_bytes_per_gpu and "all_reduce" in two.comm_bytes_per_gpu
    topo = AllGatherStrategy.from_options({"table_device": "cpu"}).topology(load_topology(f"{TOPO}:1x2"))
    cpu = topo.link_ids_of_kind("host-mem")
    assert step_bytes(two)[cpu[0]] == pytest.approx(expected_host_work(model, 2), rel=1e-9)


def test_the_lookup_lands_before_its_layer_and_the_rows_leave_after_backward(two):
    rec = two.run
    cls = rec.classes[0].name
    for layer in ("C3_lookup", "C3_linear_lookup"):
        fwd = sorted(c.start for c in rec.compute if c.cls == cls and c.name == fwd_name(layer).text)
        bwd = sorted(c.end for c in rec.compute if c.cls == cls and c.name == bwd_name(layer).text)
        pulls = sorted(c.end for c in rec.comm if c.name == f"host-lookup:{layer}")
        pushes = sorted(c.start for c in rec.comm if c.name == f"host-grad:{layer}")
        assert len(fwd) == len(pulls) == len(pushes) == ITER
        # as a ps pull: a lookup waits for the update of the step before it (the first
        # step's lookup, before any update, is not timed), so lookup k feeds forward k + 1
        for k in range(ITER):
            assert pushes[k] >= bwd[k] - 1e-12         # the gradient rows exist first
            assert pulls[k] >= pushes[k]               # the lookup reads the updated rows
            if k + 1 < ITER:
                assert pulls[k] <= fwd[k + 1] + 1e-12  # the activations are on the GPU first


def test_the_tables_and_their_state_leave_hbm():
    model = load_model(MODEL, batch=BATCH)
    gpu, cpu = run(2, gather_rows="lookups"), run(2, gather_rows="lookups", table_device="cpu")
    freed = gpu.memory.total - cpu.memory.total
    tables = sum(t.vocab * t.dim for t in model.tables)
    # at least the parameters and the Adagrad accumulator of every table
    assert freed >= tables * (model.table_bytes + model.optimizer.state_bytes_per_param)
    assert any("host memory" in n and "none in HBM" in n for n in cpu.notes)


def test_one_gpu_still_pays_the_host_and_says_so(one):
    plain = run(1, gather_rows="lookups")
    assert not plain.run.comm and one.run.comm
    assert any("table on the CPU (table_device=cpu)" in n for n in one.notes)
    assert "nothing to synchronise" not in one.compute_source


def test_deterministic_and_the_default_unchanged(two):
    again = run(2, gather_rows="lookups", table_device="cpu")
    assert again.step_time == two.step_time
    assert np.array_equal(again.run.link_bytes_at[ITER - 1], two.run.link_bytes_at[ITER - 1])
    a, b = run(2), run(2, table_device="gpu")
    assert a.step_time == b.step_time and a.comm_bytes_per_gpu == b.comm_bytes_per_gpu
    assert not any("table_device" in n for n in a.notes)


@pytest.mark.parametrize("topology, options, message", [
    (f"{TOPO}:1x2", {"table_device": "host"}, r"^--option table_device='host': expected one of gpu, cpu$"),
    ("pcie-rtx3090:2x2", {"table_device": "cpu"}, r"^--option table_device=cpu: 2 nodes; .* one node only$"),
])
def test_refusals_are_one_line_errors_naming_the_option(topology, options, message):
    with pytest.raises(InputError, match=message):
        simulate(SimulationConfig(topology=topology, model=MODEL, batch=BATCH, strategy="allgather",
                                  strategy_options=options, iterations=2, efficiency_baseline=False))


def test_a_table_with_a_dense_gradient_is_refused():
    """A full softmax tied to the table (tiny-lm ties its output projection)."""
    with pytest.raises(InputError, match=r"^--option table_device=cpu: table \S+ has a dense gradient"):
        simulate(SimulationConfig(topology="pcie-rtx3090:1x2", model="tiny-lm", batch=8,
                                  strategy="allgather", strategy_options={"table_device": "cpu"},
                                  iterations=2, efficiency_baseline=False))


def test_other_strategies_do_not_take_the_option():
    with pytest.raises(InputError, match=r"^--option table_device: strategy allreduce takes no options$"):
        simulate(SimulationConfig(topology=f"{TOPO}:1x2", model=MODEL, batch=BATCH, strategy="allreduce",
                                  strategy_options={"table_device": "cpu"}, iterations=2,
                                  efficiency_baseline=False))



def test_the_cpu_tables_host_memory_is_a_need_of_the_node(two):
    """Every worker process holds its own copy of the tables and their state in the node's
    host memory: carried as the run's host-memory need, not checked where the topology
    gives no host memory, and said with the limit in the note."""
    m = load_model(MODEL)
    per = sum(t.vocab * t.dim for t in m.tables) * (m.table_bytes + m.optimizer.state_bytes_per_param)
    need = two.memory.host
    assert need.holder == "the CPU tables" and need.per_node == pytest.approx(2 * per, rel=1e-9)
    assert need.fits is None and two.fits_in_memory
    note = next(n for n in two.notes if "on the CPU," in n)
    assert f"(2 processes: the CPU tables need {2 * per / 1e9:,.1f} GB of host memory per node; host " \
           f"memory unknown: not checked)" in note

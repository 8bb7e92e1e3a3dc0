"""EmbRace with pooled (bag) lookups: the AlltoAll carries one summed vector per sample
and feature whatever the bag size K; the ids and the owners' lookup work grow with K."""

import pytest

from embsim.engine.run import SimulationConfig, simulate
from embsim.errors import InputError
from embsim.strategies.base import STRATEGIES

BATCH, DIM, N = 4096, 64, 8
MODEL = """\
name: bag-{k}{tag}
source: test
defaults: {{batch: {batch}, seq: 1, dtype: fp32, optimizer: sgd}}
tables:
  - {{name: t0, vocab: 100000, dim: {dim}, input: f0}}
  - {{name: t1, vocab: 50000, dim: {dim}, input: f1}}
layers:
  - {{name: bottom, kind: linear, in: 13, out: {dim}}}
  - {{name: e0, kind: embedding, table: t0, lookups: {k}{pool}}}
  - {{name: e1, kind: embedding, table: t1, lookups: {k}{pool}}}
  - {{name: inter, kind: dot_interaction, vectors: 3, dim: {dim}, out: 4}}
  - {{name: top, kind: linear, in: 4, out: 1}}
"""


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("bags")
    out = {}
    for k in (1, 20):
        for pooled in (False, True):
            tag = "-sum" if pooled else ""
            path = d / f"bag-{k}{tag}.yaml"
            path.write_text(MODEL.format(k=k, tag=tag, batch=BATCH, dim=DIM,
                                         pool=", pooling: sum" if pooled else ""))
            out[k, pooled] = str(path)
    return out


def run(model, strategy="embrace", **kw):
    return simulate(SimulationConfig(topology=f"dgx-a100:1x{N}", model=model, strategy=strategy,
                                     iterations=2, efficiency_baseline=False, **kw))


def sent(result, prefix):
    return sum(c.nbytes for c in result.run.comm if c.iteration == 1 and c.name.startswith(prefix))


def lookup_s(result):
    return sum(c.end - c.start for c in result.run.compute
               if c.iteration == 1 and c.name in ("fwd:e0", "fwd:e1"))


@pytest.mark.parametrize("shard", ["cols", "tables"])
def test_pooled_alltoall_is_one_vector_per_sample_whatever_k(models, shard):
    opts = {"strategy_options": {"shard": shard}}
    one, bag, plain = (run(models[1, False], **opts), run(models[20, True], **opts),
                       run(models[20, False], **opts))
    for direction in ("embrace-fwd", "embrace-bwd"):
        assert sent(bag, direction) == pytest.approx(sent(one, direction), rel=1e-12)
        assert sent(plain, direction) == pytest.approx(20 * sent(one, direction), rel=1e-12)
    # a GPU's batch x 2 features x dim x 4 B (tables: the same vectors in one alltoallv)
    assert sent(bag, "embrace-fwd") == pytest.approx(2 * BATCH * DIM * 4, rel=1e-12)
    # the ids still carry every lookup, and the owners still read every row
    assert sent(bag, "embrace-ids") == pytest.approx(20 * sent(one, "embrace-ids"), rel=1e-12)
    assert lookup_s(bag) > 2 * lookup_s(one)
    assert bag.step_time < plain.step_time


@pytest.mark.parametrize("shard", ["rows", "hashed"])
def test_row_shards_refuse_a_pooled_layer(models, shard):
    with pytest.raises(InputError, match=rf"shard={shard}: layer e0 pools its lookups.*"
                                         r"use shard=cols or shard=tables"):
        run(models[20, True], strategy_options={"shard": shard})
    run(models[20, False], strategy_options={"shard": shard})          # unpooled: as before


def test_dedup_refuses_a_pooled_layer(models):
    with pytest.raises(InputError, match="dedup=on: layer e0 pools its lookups"):
        run(models[20, True], strategy_options={"dedup": "on"})


def test_embrace_2d_refuses_to_defer_a_pooled_gradient(models):
    with pytest.raises(InputError, match="embrace-2d: layer e.* pools its lookups.*defer=off"):
        run(models[20, True], scheduler="embrace-2d")
    r = run(models[20, True], scheduler="embrace-2d", scheduler_options={"defer": "off"})
    assert sent(r, "embrace-fwd") == pytest.approx(2 * BATCH * DIM * 4, rel=1e-12)


@pytest.mark.parametrize("strategy", sorted(set(STRATEGIES.names()) - {"embrace"}))
def test_other_strategies_run_a_pooled_model(models, strategy):
    # they exchange gradient rows or dense tensors: pooling changes only the lookup's kernels
    # (a sparse gradient even costs the bag one more pass: the pooled gradient's expansion)
    bag, plain = run(models[20, True], strategy), run(models[20, False], strategy)
    assert bag.comm_bytes_per_gpu == pytest.approx(plain.comm_bytes_per_gpu, rel=1e-12)
    assert bag.step_time == pytest.approx(plain.step_time, rel=0.05) and bag.step_time != plain.step_time

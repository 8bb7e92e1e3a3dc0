"""Everything one rank does in a calibration run, in order; rank 0 collects the results.

Stages: per-layer kernels and optimizer, alone and inside whole communication-free steps
(every rank measures; rank 0's go in the trace, so concurrent ranks load the machine as
in training), token statistics, collective sweeps, compute slowed by a collective in
flight, then whole training steps of each strategy.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import torch
import torch.distributed as dist

from embsim.trace import RankSkew

from .collectives import OPS, max_sweep_bytes, sweep, sweep_sizes
from .compute import measure_compute
from .config import CalibrateConfig
from .instep import InStepSampler, WholeStepSampler
from .interference import measure_interference
from .layers import measure_layers, measure_optimizer
from .recommender import per_sample, table_token_stats
from .spec import calibration_spec
from .step_model import step_batches, to_device
from .strategies import STRATEGIES, Strategy
from .tokens import token_source, token_stats


def progress(rank: int, message: str) -> None:
    if rank == 0:
        print(f"[calibrate {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def device_for(local_rank: int, backend: str) -> torch.device:
    if backend == "nccl":
        torch.cuda.set_device(local_rank)
        return torch.device("cuda", local_rank)
    return torch.device("cpu")


def node_groups(world: int, local_size: int):
    """(intra-node group of this rank, inter-node group of this rank) or (None, None).
    Every rank must create every group, in the same order."""
    nodes = world // local_size
    if nodes <= 1:
        return None, None
    rank = dist.get_rank()
    intra = inter = None
    for n in range(nodes):
        g = dist.new_group(list(range(n * local_size, (n + 1) * local_size)))
        if rank // local_size == n:
            intra = g
    for l in range(local_size):
        g = dist.new_group(list(range(l, world, local_size)))
        if rank % local_size == l:
            inter = g
    return intra, inter


def slowest(seconds: float, device: torch.device) -> float:
    """The largest of every rank's `seconds` (a synchronous step ends with the slowest)."""
    took = torch.tensor([seconds], dtype=torch.float64, device=device)
    dist.all_reduce(took, op=dist.ReduceOp.MAX)
    return float(took.item())


def timed_step(strategy: Strategy, inputs: tuple, device: torch.device) -> float:
    """One training step, every rank starting together; the slowest rank's seconds."""
    dist.barrier()
    t0 = time.perf_counter()
    strategy.step(*inputs)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return slowest(time.perf_counter() - t0, device)


def run_rank(cfg: CalibrateConfig, rank: int, world: int, local_rank: int, local_size: int,
             backend: str) -> dict | None:
    torch.set_num_threads(1)
    device = device_for(local_rank, backend)
    model = calibration_spec(cfg.model, cfg.max_rows)
    table = model.table
    rows = per_sample(model)            # a recommender: feature rows, its own id batches
    source = token_source(cfg.corpus, table.vocab, cfg.seq, cfg.seed, world)
    batches = step_batches(model, source, cfg.seed)
    say = lambda m: progress(rank, m)   # noqa: E731

    def tokens(batch: int, step: int = 0) -> torch.Tensor:
        return torch.from_numpy(source.batch(rank, step, batch)[:, :-1].copy())

    def inputs(batch: int, step: int) -> tuple:
        return to_device(batches.inputs(rank, step, batch), device)

    say(f"{model.name}: {len(model.layers)} layers at batch {cfg.batches}, seq {cfg.seq}, "
        f"{world} ranks on {device}")
    layers = measure_layers(model, cfg.batches, cfg.seq, tokens, device, cfg.warmup, cfg.reps, say)
    say("optimizer steps")
    sparse_rows = measure_optimizer(model, cfg.batch, lambda b: batches.inputs(rank, 0, b)[0],
                                    device, cfg.warmup, cfg.reps)
    say("kernel table: GEMM grid, stream/gather bandwidth, launch, LSTM step")
    compute = measure_compute(device, cfg.quick, cfg.warmup, cfg.reps)
    stats = [s for b in cfg.batches
             for s in (table_token_stats(batches, b, world) if rows
                       else [token_stats(source, table.name, b, world)])]

    top = max_sweep_bytes(device, world, (1 << 20) if cfg.quick else cfg.max_sweep_bytes)
    sizes = sweep_sizes(top, factor=16 if cfg.quick else 4)
    groups = [("all", None)]
    intra, inter = node_groups(world, local_size)
    if intra is not None:
        groups += [("intra-node", intra), ("inter-node", inter)]
    curves = []
    for scope, group in groups:
        for op in OPS:
            say(f"sweep {op} ({scope}) {sizes[0]} B .. {sizes[-1]} B")
            curve = sweep(op, sizes, device, group, scope, warmup=cfg.warmup,
                          reps=3 if cfg.quick else 5)
            # Rank 0 is in node 0's group and in local index 0's: those curves are kept.
            curves.append(curve)

    interference = measure_interference(
        model, layers, cfg.batch, cfg.seq, tokens, device,
        next(c for c in curves if c.op == "all_reduce" and c.scope == "all"),
        cfg.warmup, 2 * cfg.reps, say)
    say(f"interference: compute x1/(1+{interference.compute_factor:.3f}) while a collective runs, "
        f"collectives x1/(1+{interference.comm_factor:.3f}) while compute runs")

    # Whole steps of every strategy, and communication-free steps of the untied model
    # timed layer by layer (instep.py), round-robin: the machine drifts over seconds
    # (other tenants, memory reclaim), and interleaving makes every strategy and the
    # per-layer timings see the same drift.
    say(f"training steps ({', '.join(STRATEGIES)}, "
        f"{'whole communication-free steps' if rows else 'in-step layer timings'}), interleaved")
    sampler = WholeStepSampler(model, device) if rows else InStepSampler(model, device)
    strategies = {name: Strategy(name, model, cfg.seed, device) for name in STRATEGIES}
    in_step: dict[int, list[dict]] = {b: [] for b in cfg.batches}
    local_rank0, local_slowest = [], []       # whole communication-free steps at cfg.batch
    steps = {name: [] for name in STRATEGIES}
    for i in range(1 + cfg.step_samples):         # the first round is a warm-up
        step_inputs = inputs(cfg.batch, i)
        for name, strategy in strategies.items():
            took = timed_step(strategy, step_inputs, device)
            if i > 0:
                steps[name].append(took)
        for b in cfg.batches:
            sample = sampler.sample(inputs(b, i))
            if i > 0:
                in_step[b].append(sample)
            if i > 0 and b == cfg.batch:
                mine = sum(sample.values())
                local_rank0.append(mine)
                local_slowest.append(slowest(mine, device))
    skipped = strategies[STRATEGIES[0]].model.skipped
    del strategies
    # The layers a step runs replace their isolated timings (which stay for the
    # sparse-gradient lookup and the layers the step leaves out); so does its SGD.
    timed_layers, step_optimizer = sampler.timings(in_step)
    replaced = {t.name: t for t in timed_layers}
    layers = [replaced.get(t.name, t) for t in layers]
    # the step's SGD over every parameter is the "dense" rate
    optimizer = [step_optimizer, sparse_rows]
    skew = RankSkew(cfg.batch, float(np.median(local_rank0)), float(np.median(local_slowest)),
                    len(local_rank0))
    if rank != 0:
        return None
    return {"layers": layers, "optimizer": optimizer, "token_stats": stats, "collectives": curves,
            "steps": steps, "device": device, "skipped": skipped, "interference": interference,
            "rank_skew": skew, "compute": compute}

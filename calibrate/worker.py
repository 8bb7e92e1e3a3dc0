"""Everything one rank does in a calibration run, in order; rank 0 collects the results.

Stages: per-layer kernels and optimizer (every rank measures; rank 0's go in the trace,
so concurrent ranks load the machine as in training), token statistics, collective
sweeps, then whole training steps of each strategy.
"""

from __future__ import annotations

import sys
import time

import torch
import torch.distributed as dist

from .collectives import OPS, max_sweep_bytes, sweep, sweep_sizes
from .config import CalibrateConfig
from .interference import measure_interference
from .layers import measure_layers, measure_optimizer
from .spec import model_spec
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


def run_rank(cfg: CalibrateConfig, rank: int, world: int, local_rank: int, local_size: int,
             backend: str) -> dict | None:
    torch.set_num_threads(1)
    device = device_for(local_rank, backend)
    model = model_spec(cfg.model)
    table = model.table
    source = token_source(cfg.corpus, table.vocab, cfg.seq, cfg.seed, world)
    say = lambda m: progress(rank, m)   # noqa: E731

    def tokens(batch: int, step: int = 0) -> torch.Tensor:
        return torch.from_numpy(source.batch(rank, step, batch)[:, :-1].copy())

    say(f"{model.name}: {len(model.layers)} layers at batch {cfg.batches}, seq {cfg.seq}, "
        f"{world} ranks on {device}")
    layers = measure_layers(model, cfg.batches, cfg.seq, tokens, device, cfg.warmup, cfg.reps, say)
    say("optimizer steps")
    optimizer = measure_optimizer(model, cfg.batch, tokens, device, cfg.warmup, cfg.reps)
    stats = [token_stats(source, table.name, b, world) for b in cfg.batches]

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
        next(c for c in curves if c.op == "all_reduce" and c.scope == "all"), sizes[-1],
        cfg.warmup, cfg.reps, say)
    say(f"interference factor {interference.factor:.3f}")

    steps = {}
    for name in STRATEGIES:
        say(f"training steps: {name}")
        strategy = Strategy(name, model, cfg.seed, device)
        samples = []
        for i in range(1 + cfg.step_samples):         # the first step is a warm-up
            ids = torch.from_numpy(source.batch(rank, i, cfg.batch).copy()).to(device)
            dist.barrier()
            t0 = time.perf_counter()
            strategy.step(ids[:, :-1], ids[:, 1:])
            if device.type == "cuda":
                torch.cuda.synchronize(device)
            took = torch.tensor([time.perf_counter() - t0], dtype=torch.float64, device=device)
            dist.all_reduce(took, op=dist.ReduceOp.MAX)    # the step ends when the slowest rank's does
            if i > 0:
                samples.append(float(took.item()))
        steps[name] = samples
        skipped = strategy.model.skipped
        del strategy
    if rank != 0:
        return None
    return {"layers": layers, "optimizer": optimizer, "token_stats": stats, "collectives": curves,
            "steps": steps, "device": device, "skipped": skipped, "interference": interference}

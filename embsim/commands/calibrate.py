"""`embsim calibrate`: measure real kernels, collectives and training steps into a trace."""

from __future__ import annotations

import datetime
import importlib.util
import re
import shlex
import socket
import sys

import click

from ..errors import InputError, one_line
from .checks import model_option


@click.command("calibrate")
@click.option("--backend", type=click.Choice(["auto", "nccl", "gloo"]), default="auto", show_default=True)
@click.option("--world", type=click.IntRange(min=1), default=None,
              help="Local ranks to spawn (default: all local GPUs, or 2 on CPU; at least 2 on CPU, "
                   "whose links are fitted to the ranks' collectives). Ignored under torchrun.")
@model_option("Model zoo name (embsim model list).", default="tiny-lm", show_default=True)
@click.option("--batch", type=click.IntRange(min=1), default=8, show_default=True, help="Per-rank batch.")
@click.option("--seq", type=click.IntRange(min=1), default=None,
              help="Tokens per sequence (default 32; none for a per-sample model such as a "
                   "recommender).")
@click.option("--quick", is_flag=True, help="Few repetitions and a short sweep (tests, smoke runs).")
@click.option("--corpus", type=click.Path(exists=True, dir_okay=False), default=None,
              help="Real text (tokenised by words) instead of Zipf token batches.")
@click.option("--out", default=None,
              help="Trace file (default traces/<device>-<backend>-<model>-<host>-<UTC time>.yaml).")
@click.option("--topology-out", default=None,
              help="Also write the fitted host topology here (CPU; the trace embeds it anyway).")
@click.option("--force", is_flag=True, help="Overwrite an existing --out / --topology-out.")
@click.option("--max-bytes", type=click.IntRange(min=1024), default=64 << 20, show_default=True,
              help="Largest collective size, further bounded by free memory.")
@click.option("--max-rows", type=click.IntRange(min=1), default=None,
              help="Build every table larger than this with this many rows (a DLRM's 1e7-1e8-row "
                   "tables do not fit a calibration, which holds 11 copies of the model per rank); "
                   "the trace records it and validate --trace simulates the same tables.")
def command(backend, world, model, batch, seq, quick, corpus, out, topology_out, force, max_bytes,
            max_rows):
    """Capture per-layer times, collective sweeps and real training steps into a trace."""
    # only this command needs torch (through embsim.calibrate); the simulator never imports it
    if importlib.util.find_spec("torch") is None:
        raise InputError("calibrate runs real PyTorch kernels and needs torch: "
                         "pip install 'embsim[calibrate]'")
    from ..calibrate.config import CalibrateConfig
    from ..calibrate.launch import NoHostTopology, default_world, resolve_backend, run_calibration

    chosen = resolve_backend(backend)
    if world is None:
        world = default_world(chosen)
    if out is None:
        # a new name per run: a calibration never replaces a shipped or earlier trace
        host = re.sub(r"[^A-Za-z0-9]+", "-", socket.gethostname()).strip("-").lower() or "host"
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        out = f"traces/{'gpu' if chosen == 'nccl' else 'cpu'}-{chosen}-{model}-{host}-{stamp}.yaml"
    argv = sys.argv[1:] if sys.argv[1:2] == ["calibrate"] else ["calibrate"] + sys.argv[1:]
    cfg = CalibrateConfig(model=model, batch=batch, seq=seq, world=world, backend=chosen,
                          quick=quick, corpus=corpus, out=out, topology_out=topology_out,
                          force=force,
                          command=" ".join(shlex.quote(a) for a in ["embsim"] + argv),
                          max_sweep_bytes=max_bytes, max_rows=max_rows)
    try:
        path = run_calibration(cfg)
    except NoHostTopology as exc:
        # the measurements are kept; only the host's link model is missing
        click.echo(str(exc.path))
        if topology_out:
            click.echo(one_line(f"embsim: error: --topology-out {topology_out}: not written: "
                                f"{exc.reason} (the trace {exc.path} is written without a host "
                                "topology)"), err=True)
            return 1
        click.echo(one_line(f"embsim: warning: {exc.path} has no host topology: {exc.reason} "
                            "(simulate it with --topology)"), err=True)
        return 0
    if path is not None:
        click.echo(str(path))

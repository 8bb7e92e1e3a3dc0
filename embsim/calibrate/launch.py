"""Start the ranks (torch.multiprocessing locally, or the ranks torchrun made), run the
worker, and write the trace atomically, only if every rank succeeded.

A failing rank makes torch.multiprocessing stop the others; Ctrl-C terminates them all,
and a killed parent takes its ranks with it (die_with_parent). Nothing is written until
the end, and then by rename. The measured machine is embedded in the trace (one file, one
rename: never a new topology beside an old trace), named after host and date so that it
cannot collide with a preset; an existing file is never overwritten without --force.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
import pickle
import platform
import re
import signal
import socket
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from embsim.atomic import refuse_overwrite
from embsim.errors import InputError
from embsim.lifetime import die_with_parent, temp_dir
from embsim.trace import SCHEMA_VERSION, Provenance, StepSamples, Trace, write_trace
from embsim.trace.quality import quality_note
from embsim.workload import is_model_file
from embsim.yamlio import file_sha256

from .config import TOKEN_SEQ, CalibrateConfig
from .memory import require_fit
from .modules import require_buildable
from .recommender import per_sample, stack_plan
from .spec import calibration_spec
from .host_topology import fit_links, host_topology_doc, measure_device, write_host_topology
from .worker import progress, run_rank


def check_outputs(cfg: CalibrateConfig) -> None:
    """Refuse, before anything is measured (and again before writing), to overwrite a
    file without --force or to write under a file."""
    for flag, path in (("--out", cfg.out), ("--topology-out", cfg.topology_out)):
        if path is not None and not str(path).strip():
            raise InputError(f"{flag}: empty file name")    # a config built without the CLI
        refuse_overwrite(path, cfg.force, flag)
        if path is not None:
            require_writable_folder(Path(path), flag)
    # realpath, not Path.resolve: a symlink loop is an answer, not a RuntimeError
    if cfg.out and cfg.topology_out and os.path.realpath(cfg.out) == os.path.realpath(cfg.topology_out):
        # the host topology, written second, would replace the trace just measured
        raise InputError(f"--out and --topology-out are one file ({cfg.out}): give two names")


def require_writable_folder(path: Path, flag: str) -> None:
    """Create and remove a file where `path` will be written (its folder, or the nearest
    existing one that write_trace would create it in): a read-only or foreign folder is
    found now, not after the whole run it would lose. Creates no folder."""
    folder = path.parent
    while not folder.is_dir() and folder != folder.parent:
        folder = folder.parent
    try:
        # atomic_write's temporary name: one left by a killed run is cleaned by the next write
        fd, probe = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise InputError(f"{flag} {path}: cannot write in {folder}: {exc.strerror or exc}") from None


def host_name(stamp: str) -> str:
    """The calibrated host's topology name: host, device kind and UTC date-time."""
    host = re.sub(r"[^A-Za-z0-9]+", "-", socket.gethostname()).strip("-").lower() or "host"
    return f"calibrated-{host}-cpu-{stamp}"


def resolve_backend(requested: str) -> str:
    if requested == "auto":
        return "nccl" if torch.cuda.is_available() and dist.is_nccl_available() else "gloo"
    if requested == "nccl" and not torch.cuda.is_available():
        raise InputError("--backend nccl: no CUDA device is visible")
    if requested not in ("nccl", "gloo"):
        raise InputError(f"--backend {requested!r}: must be auto, nccl or gloo")
    return requested


def default_world(backend: str) -> int:
    """Ranks to spawn when --world is not given: every local GPU under NCCL, 2 on CPU."""
    return torch.cuda.device_count() if backend == "nccl" else 2


def check_world(world: int, backend: str) -> None:
    """--world spawns that many local ranks, each a process with torch loaded: more than the
    machine's GPUs cannot run (NCCL), and more than its cores (at least the default 2)
    times contention, not kernels, and can exhaust memory before the model check says so."""
    gpus = backend == "nccl"
    limit = torch.cuda.device_count() if gpus else max(2, os.cpu_count() or 1)
    if world > limit:
        raise InputError(f"--world {world}: more local ranks than this machine's {limit} "
                         f"{'GPUs' if gpus else 'CPU cores'} (torchrun spreads ranks over machines)")


def check_ranks(world: int, backend: str, label: str = "--world") -> None:
    """On CPU the host topology is fitted to the ranks' gloo collectives: one rank has no
    link to measure (a ring of one has no steps), so its fit could only be 0/0."""
    if backend == "gloo" and world < 2:
        raise InputError(f"{label} {world}: a one-rank world has no collective to measure "
                         "(the host's links are fitted to the ranks' gloo sweep); give 2 or more")


def exit_message(rank: int, exit_code: int | None, signal_name: str | None) -> str:
    """Why a spawned rank ended without an exception: SIGKILL is, on a calibration host, the
    kernel's OOM killer (the memory check counts parameters, not activations)."""
    if exit_code == -signal.SIGKILL or signal_name == "SIGKILL":
        return (f"calibration failed: rank {rank} was killed (SIGKILL), most likely out of "
                "memory; try a smaller --batch")
    return f"calibration failed: rank {rank} exited ({exit_code if exit_code is not None else signal_name})"


class NoHostTopology(Exception):
    """The trace is written, without a host topology: the link fit was unusable (`reason`).
    Not an InputError: the measurements are kept, and the caller says what is missing."""

    def __init__(self, path: Path, reason: str):
        super().__init__(reason)
        self.path, self.reason = path, reason


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spawned(rank, cfg, world, port, backend, result_dir):
    die_with_parent()
    dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    result = run_rank(cfg, rank, world, rank, world, backend)
    if rank == 0:
        with open(os.path.join(result_dir, "rank0.pkl"), "wb") as f:
            pickle.dump(result, f)
    leave_spawned_rank()


def leave_spawned_rank() -> None:
    """End a spawned rank once its results are on disk: wait for every peer, then exit
    without running gloo's C++ teardown.

    That teardown (destroy_process_group, or the process group's destructor at
    interpreter exit) now and then destroys a still-joinable worker thread and aborts the
    rank ("terminate called without an active exception", SIGABRT), even after a
    barrier: a 2-core CI run lost a passing calibration to it. After the barrier no rank
    needs a peer any more, so the process leaves at once and the kernel closes its
    sockets. Exit status 0 is what torch.multiprocessing reads as success.
    """
    dist.barrier()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def capped_rows(cfg: CalibrateConfig) -> int | None:
    """--max-rows where it cut a table (the trace says so), else None."""
    if cfg.max_rows is None:
        return None
    full = calibration_spec(cfg.model)
    return cfg.max_rows if any(t.vocab > cfg.max_rows for t in full.tables.values()) else None


def resolve_seq(cfg: CalibrateConfig, spec) -> CalibrateConfig:
    """The run's sequence length: --seq, else TOKEN_SEQ; a per-sample model (a recommender)
    has none, so 1, its whole steps built and refused up front (recommender.stack_plan)."""
    if not per_sample(spec):
        return dataclasses.replace(cfg, seq=cfg.seq or TOKEN_SEQ)
    if cfg.seq not in (None, 1):
        raise InputError(f"--seq {cfg.seq}: {spec.flag} reads one row of features per "
                         "sample, not a token sequence; leave --seq out")
    if cfg.corpus:
        raise InputError(f"--corpus {cfg.corpus}: {spec.flag} reads categorical feature "
                         "ids, not text")
    stack_plan(spec)
    return dataclasses.replace(cfg, seq=1)


def under_torchrun() -> bool:
    return all(k in os.environ for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR"))


def run_calibration(cfg: CalibrateConfig) -> Path | None:
    """The written trace (None on a torchrun rank other than 0); NoHostTopology when it is
    written without the host topology."""
    check_outputs(cfg)
    # an unknown --model, or one calibrate cannot build, fails here, once, not in every
    # spawned rank after their start-up
    spec = calibration_spec(cfg.model, cfg.max_rows)
    require_buildable(spec)
    cfg = resolve_seq(cfg, spec)
    backend = resolve_backend(cfg.backend)
    # a model that cannot fit is refused here, not killed by the OOM killer mid-run
    local_ranks = int(os.environ.get("LOCAL_WORLD_SIZE", os.environ.get("WORLD_SIZE", 1))) \
        if under_torchrun() else cfg.world
    if not under_torchrun():
        check_world(cfg.world, backend)
        check_ranks(cfg.world, backend)
    else:
        check_ranks(int(os.environ["WORLD_SIZE"]), backend, "WORLD_SIZE")
    require_fit(spec, local_ranks, backend)
    loadavg = os.getloadavg()
    if under_torchrun():
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        local_size = int(os.environ.get("LOCAL_WORLD_SIZE", world))
        dist.init_process_group(backend, init_method="env://")
        try:
            result = run_rank(cfg, rank, world, int(os.environ["LOCAL_RANK"]), local_size, backend)
            # Leave together, as the spawned ranks do: a rank tearing gloo down while a
            # peer is still connected can abort that peer in C++ (SIGABRT).
            dist.barrier()
        finally:
            dist.destroy_process_group()
        if rank != 0:
            return None
        return finish(cfg, result, backend, world, world // local_size, loadavg)
    world = cfg.world
    with temp_dir("embsim-calibrate-") as tmp:
        ctx = mp.start_processes(_spawned, args=(cfg, world, _free_port(), backend, tmp),
                                 nprocs=world, join=False, start_method="spawn")
        try:
            while not ctx.join():
                pass
        except mp.ProcessRaisedException as exc:
            # The rank's traceback ends with its exception line: that is the message.
            last = str(exc).strip().splitlines()[-1]
            raise InputError(f"calibration failed on rank {exc.error_index}: {last}") from None
        except mp.ProcessExitedException as exc:
            raise InputError(exit_message(exc.error_index, exc.exit_code, exc.signal_name)) from None
        except KeyboardInterrupt:
            for p in ctx.processes:
                if p.is_alive():
                    p.terminate()
            for p in ctx.processes:
                p.join()
            raise
        with open(os.path.join(tmp, "rank0.pkl"), "rb") as f:
            result = pickle.load(f)
    return finish(cfg, result, backend, world, 1, loadavg)


def _devices(device: torch.device) -> tuple[str, ...]:
    if device.type == "cuda":
        return tuple(torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count()))
    return (f"cpu: {_cpu_model()}",)


def _cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _driver() -> str | None:
    try:
        return Path("/proc/driver/nvidia/version").read_text().split("Kernel Module")[1].split()[0]
    except (OSError, IndexError):
        return None


def select_gpu_topology(device_name: str) -> str:
    """The preset whose GPU model names this device ("NVIDIA H200" -> dgx-h200), or ""."""
    from embsim.topology import find_preset, list_presets
    from embsim.topology.parse import load_node_type
    words = device_name.upper().replace("NVIDIA", "").replace("-", " ").split()
    for name in list_presets():
        try:
            node = load_node_type(find_preset(name))
        except InputError:
            continue
        family = node.gpu.model.upper().split("-")[0]
        if node.gpu.arch and family in words:
            return name
    return ""


def finish(cfg: CalibrateConfig, result: dict, backend: str, world: int, nodes: int,
           loadavg) -> Path:
    device: torch.device = result["device"]
    out = Path(cfg.out)
    now = datetime.datetime.now(datetime.timezone.utc)
    host_doc, unfitted = None, ""
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        topology = select_gpu_topology(name)
        v = torch.cuda.nccl.version()
        backend_version = "NCCL " + (".".join(map(str, v)) if isinstance(v, tuple) else str(v))
    else:
        name = "cpu"
        backend_version = f"gloo (torch {torch.__version__})"
        try:
            bandwidth, latency = fit_links([c for c in result["collectives"] if c.scope == "all"])
        except InputError as exc:
            # the layer times, steps and measured curves still stand; only the host's
            # link model could not be fitted, so no host topology is made up from noise
            bandwidth, topology, unfitted = None, "", str(exc)
        if bandwidth is not None:
            tflops, gbps = measure_device(device)
            mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30   # hbm_gb is GiB
            progress(0, f"host links fitted: {bandwidth / 1e9:.3f} GB/s, {latency * 1e6:.1f} us per step")
            f = result.get("interference")
            topology = host_name(now.strftime("%Y%m%dT%H%M%SZ"))
            host_doc = host_topology_doc(topology, _cpu_model(), world, mem_gb, tflops, gbps,
                                         bandwidth, latency, out.name,
                                         interference=None if f is None else (f.compute_factor, f.comm_factor))
    prov = Provenance(
        host=socket.gethostname(),
        date=now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        command=cfg.command, world=world, backend=backend, backend_version=backend_version,
        torch=str(torch.__version__), python=platform.python_version(), devices=_devices(device),
        driver=_driver(), cuda=torch.version.cuda,
        label=cfg.label or ("CPU" if device.type == "cpu" else "GPU"),
        loadavg=tuple(float(x) for x in loadavg), threads_per_rank=1, nodes=nodes)
    # the steps ran modules.LanguageModel, which unties a tied output projection
    steps = {s: StepSamples(s, world, cfg.batch, cfg.seq, tuple(v), float(np.median(v)),
                            untied_outputs=True)
             for s, v in result["steps"].items()}
    # a model file may change after this: the trace keeps what it was
    digest = file_sha256(cfg.model) if is_model_file(cfg.model) else ""
    trace = Trace(schema_version=SCHEMA_VERSION, device=name, model=cfg.model, seq=cfg.seq,
                  topology=topology, provenance=prov,
                  layers={l.name: l for l in result["layers"]}, optimizer=tuple(result["optimizer"]),
                  collectives=tuple(result["collectives"]), steps=steps,
                  token_stats=tuple(result["token_stats"]),
                  interference=result.get("interference"), rank_skew=result.get("rank_skew"),
                  compute=result.get("compute"), host_topology=host_doc, model_sha256=digest,
                  table_rows_cap=capped_rows(cfg))
    check_outputs(cfg)          # again: a file may have appeared while we measured
    path = write_trace(out, trace)
    progress(0, f"trace written: {path}")
    note = quality_note(trace)
    if note:
        # the trace is kept; whoever reads it sees the same line in its compute source
        progress(0, f"warning: {note}; a quieter host (or more repetitions) would measure them better")
    if unfitted:
        raise NoHostTopology(path, unfitted)
    if cfg.topology_out and host_doc is not None:
        # a copy of what the trace embeds, for `--topology FILE`; the trace does not need it
        progress(0, f"host topology written: {write_host_topology(cfg.topology_out, host_doc)}")
    return path

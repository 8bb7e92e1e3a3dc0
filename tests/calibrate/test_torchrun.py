"""Under torchrun (env:// rendezvous) calibrate uses the launcher's ranks instead of
spawning its own."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from embsim.trace import load_trace

ROOT = Path(__file__).resolve().parents[2]


def test_quick_calibrate_under_torchrun(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out, topo = tmp_path / "t.yaml", tmp_path / "host.yaml"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
           f"--master_port={port}", "-m", "embsim", "calibrate", "--quick", "--backend", "gloo",
           "--model", "tiny-lm", "--out", str(out), "--topology-out", str(topo)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    trace = load_trace(out)          # written either way: the measurements are kept
    assert trace.provenance.world == 2
    assert set(trace.steps) == {"allreduce", "allgather", "embrace"}
    # the host copy exists exactly when the trace embeds a host; a link fit unusable on a
    # busy machine leaves neither, and the requested --topology-out not written is exit 1
    assert topo.is_file() == (trace.host_topology is not None)
    if trace.host_topology is not None:
        assert proc.returncode == 0, proc.stderr[-2000:]
    else:
        assert proc.returncode != 0 and "--topology-out" in proc.stderr, proc.stderr[-2000:]

"""The one-node Ring/LL128 gap (A100 at 2-16 MiB): the rate the curves imply, against the
bounds NCCL's own LL128 kernel sets (collective_notes.md, "Gaps the model does not explain").

    python -m embsim.collectives.ll128_rate [CURVE.yaml ...]

Nothing here feeds the model; it computes the figures the notes quote, from the packaged
curves and NCCL's source constants, so that they are reproducible. Per Ring/LL128 point:

* `implied` -- the per-GPU data rate (busbw units: the bytes a rank sends per second) left
  once NCCL's latency is taken out of the measured time; `ratio` = the model's transfer
  time over that measured remainder (1 = the model's rate);
* `marginal` -- between consecutive LL128 points, factor x dS / dt: no latency assumed, so
  a fixed per-op cost (a launch floor, a per-step sync: 15 steps at every size) cancels;
* `inflight` -- candidate (1), bytes in flight over a hop: a CTA can have at most
  min(one step's chunk, its warps' round of lines, the FIFO's NCCL_STEPS slots) in flight
  towards the next rank, and NCCL's per-hop Ring/LL128 latency (hwLat, 1.9 µs over
  NVLink) bounds how often that window turns over;
* `rounds` -- candidate (3): rounds of LL128 lines each warp moves per step (GenericOp's
  while loop; 20 warps x 1920 B per round). A per-round latency costs the same at equal
  rounds, whatever the bytes.
Then the untrimmed one-node Ring/LL points the same way (`implied`, with NCCL's LL latency:
a latency-bound remainder, so only indicative), and the LL128 points' rate on the wire -- the
bytes their SM stores put on NVLink per data byte: 16/15 for LL128 (15 data u64 per 16-u64
line; 2 for LL, an 8 B flag per 8 B of data) -- against the published SM peer-copy rates of
the curve's GPU (peer_copy_rates.py): candidate (5), a per-GPU cap on SM stores, the
peer-write hypothesis of the notes. Such a cap binds LL128 only if LL128's wire rate reaches it.
Sources: NCCL v2.18.5 / v2.29.3 src/include/device.h (devcomm.h) NCCL_LL128_* and
NCCL_STEPS, prims_ll128.h GenericOp / recvReduceSendCopy, enqueue.cc (channel and thread
trimming), graph/tuning.cc (hwLat).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

from embsim.yamlio import get, load_yaml

from .busbw import busbw_factor
from .channels import runtime_lanes
from .constants import NCCL_STEPS, PROTOS
from .model import CollectiveModel
from .nccl_env import env_from_text
from .peer_copy_rates import figures
from .pipeline import WARP_SIZE, step_bytes
from .releases import proto_filter
from .validation import DATA_DIR, _algo, _env, _topology, file_release
from .validation_file import check_curve_file

LL128_SHMEM_ELEMS_PER_THREAD = 8       # device.h NCCL_LL128_SHMEM_ELEMS_PER_THREAD (u64 per thread per round)
LL128_LINE_ELEMS, LL128_DATA_ELEMS = 16, 15   # NCCL_LL128_LINEELEMS, NCCL_LL128_DATAELEMS
# data bytes one warp moves per round: WARP_SIZE x 8 u64 of wire, 15 of every 16 u64 data (1920 B)
WARP_ROUND_BYTES = WARP_SIZE * LL128_SHMEM_ELEMS_PER_THREAD * 8 * LL128_DATA_ELEMS // LL128_LINE_ELEMS
# bytes stored on the wire per data byte: LL128's lines (NCCL_LL128_LINEELEMS / _DATAELEMS);
# LL's ncclLLFifoLine (device.h: data1, flag1, data2, flag2 -- 8 B of data per 8 B of flag)
WIRE_PER_DATA = {"LL128": LL128_LINE_ELEMS / LL128_DATA_ELEMS, "LL": 2.0}
DEFAULT_CURVES = ("azure-nd-a100-v4-allreduce", "ext2-modal-a100-40gb-1x8-g8-all-reduce",
                  "stas00-8xa100-allreduce", "oci-bm-gpu4-8-allreduce", "azure-nd-gb200-v6-allreduce")


@dataclass(frozen=True)
class Ll128Point:
    size: int
    measured_us: float
    latency_us: float      # NCCL's latency (pipeline: LL128 pays no per-step cost in one node)
    transfer_us: float     # the model's data time at NCCL's LL128 kernel bandwidth
    model_rate: float      # GB/s per GPU (busbw units) the model moves data at
    channels: int
    threads: int
    chunk: float           # bytes per (channel, rank) step: the one loop's exact chunk
    factor: float          # busbw factor: bytes a rank sends per byte of message
    proto: str = "LL128"

    @property
    def implied_rate(self) -> float:
        """GB/s per GPU (busbw units) the measured time leaves after NCCL's latency."""
        left = self.measured_us - self.latency_us
        return self.factor * self.size / (1000.0 * left) if left > 0 else math.inf

    @property
    def ratio(self) -> float:
        return self.implied_rate / self.model_rate

    @property
    def wire_rate(self) -> float:
        """GB/s per GPU the protocol's stores put on NVLink at the implied data rate."""
        return self.implied_rate * WIRE_PER_DATA[self.proto]

    @property
    def rounds(self) -> int:
        """Rounds of lines per warp per step (prims_ll128.h GenericOp)."""
        return max(1, math.ceil(self.chunk / (self.threads // WARP_SIZE * WARP_ROUND_BYTES)))

    def inflight_bound(self, hop_us: float) -> float:
        """GB/s per GPU (busbw units) if each CTA's bytes in flight turned over once per hop."""
        window = min(self.chunk, self.threads // WARP_SIZE * WARP_ROUND_BYTES,
                     NCCL_STEPS * step_bytes("LL128"))
        return self.channels * window / (1000.0 * hop_us)


def ll128_points(path: str | Path) -> tuple[list[Ll128Point], float]:
    """(the curve's one-node Ring/LL128 points, NCCL's per-hop Ring/LL128 latency in µs)."""
    points, hops, _ = curve_points(path, ("LL128",))
    return points, hops["LL128"]


def curve_points(path: str | Path, protos: tuple[str, ...]) -> tuple[list[Ll128Point], dict, int]:
    """(the curve's one-node Ring points NCCL runs in one of `protos`, NCCL's per-hop Ring
    latency in µs per protocol, the GPUs' SM arch): the curve planned once for all of them."""
    doc = load_yaml(path)
    check_curve_file(doc)
    d = doc.data
    how = get(doc, (), d, "how", str, "")
    nodes, gpus = int(d["nodes"]), int(d["gpus_per_node"])
    release = file_release(d)
    model = CollectiveModel(_topology(d["preset"], nodes, gpus), algo=_algo(how),
                            proto=proto_filter(release, _env(how, "NCCL_PROTO")),
                            nccl_version=release.version, nccl_env=env_from_text(how, "how:"),
                            threshold_choice=release.threshold_choice)
    ranks = list(range(nodes * gpus))
    shape, graphs = model.shape(tuple(ranks))
    hops = {p: model.consts.hw_lat[shape.intra_hw]["Ring"][PROTOS.index(p)] for p in protos}
    factor = busbw_factor(d["op"], len(ranks))
    out = []
    for size in sorted(int(s) for s in d["busbw"]) if nodes == 1 else ():
        busbw = float(d["busbw"][size])
        if busbw <= 0:
            continue
        plan = model.plan(d["op"], size, ranks)
        proto = plan.proto
        if plan.algo != "Ring" or proto not in protos:
            continue
        nc, nt = runtime_lanes(size, "Ring", proto, len(ranks), graphs.comm_channels)
        lat, transfer = plan.latency * 1e6, (plan.time - plan.latency) * 1e6
        out.append(Ll128Point(size, factor * size / (1000.0 * busbw), lat, transfer,
                              factor * size / (1000.0 * transfer), nc, nt, size / (nc * len(ranks)), factor,
                              proto))
    return out, hops, int(shape.arch)


def marginal_rates(points: list[Ll128Point]) -> list[tuple[int, int, float]]:
    """(size a, size b, GB/s per GPU) between consecutive points: factor x dS / dt."""
    return [(a.size, b.size, a.factor * (b.size - a.size) / (1000.0 * (b.measured_us - a.measured_us)))
            for a, b in zip(points, points[1:]) if b.measured_us > a.measured_us]


def wire_range(points: list[Ll128Point], proto: str) -> tuple[float, float] | None:
    """(lowest, highest) GB/s per GPU on the wire of the `proto` points, or None."""
    rates = [p.wire_rate for p in points if p.proto == proto and math.isfinite(p.wire_rate)]
    return (min(rates), max(rates)) if rates else None


def peer_copy_lines(points: list[Ll128Point], arch: int) -> list[str]:
    """The Ring/LL128 wire rates against the published SM peer-copy rates of `arch`."""
    both = {kind: [f.per_direction for f in figures(arch, kind, True)] for kind in ("write", "read")}
    one = {kind: [f.per_direction for f in figures(arch, kind, False)] for kind in ("write", "read")}
    lines = [f"  published SM peer {kind} (sm{arch}), GB/s per direction: one way {_span(one[kind])}, "
             f"both ways {_span(both[kind])}" for kind in ("write", "read") if one[kind] or both[kind]]
    span = wire_range(points, "LL128")
    if span:
        lines.insert(0, f"  Ring/LL128 on the wire: {span[0]:.1f}-{span[1]:.1f} GB/s per GPU")
        if both["write"]:
            top = max(both["write"])
            lines.append(f"  Ring/LL128 wire / fastest both-ways SM write: {span[0] / top:.2f}-{span[1] / top:.2f}")
    return lines


def untrimmed(points: list[Ll128Point]) -> list[Ll128Point]:
    """The points NCCL launches on its full (channels, threads) -- its rate regime."""
    full = max(((p.channels, p.threads) for p in points), default=None)
    return [p for p in points if (p.channels, p.threads) == full]


def _span(rates: list[float]) -> str:
    return f"{min(rates):.1f}-{max(rates):.1f}" if rates else "none"


def report(path: str | Path) -> str:
    both, hops, arch = curve_points(path, ("LL128", "LL"))
    points, hop = [p for p in both if p.proto == "LL128"], hops["LL128"]
    ll = untrimmed([p for p in both if p.proto == "LL"])
    lines = [f"{Path(path).stem}: one-node Ring/LL128 points (hop {hop} µs)"]
    if not points:
        return lines[0] + ": none"
    lines.append(f"{'size':>10} {'meas µs':>8} {'lat µs':>7} {'model':>7} {'implied':>8} {'ratio':>6} "
                 f"{'lanes':>8} {'chunk B':>8} {'rounds':>6} {'inflight':>9}")
    for p in points:
        lines.append(f"{p.size:>10} {p.measured_us:8.1f} {p.latency_us:7.1f} {p.model_rate:7.1f} "
                     f"{p.implied_rate:8.1f} {p.ratio:6.2f} {p.channels:>3}x{p.threads:<4} {p.chunk:8.0f} "
                     f"{p.rounds:>6} {p.inflight_bound(hop):9.1f}")
    for a, b, rate in marginal_rates(points):
        lines.append(f"  marginal {a >> 20}->{b >> 20} MiB: {rate:.1f} GB/s per GPU")
    for p in ll:
        lines.append(f"  Ring/LL {p.size:>8} at {p.channels}x{p.threads}: {p.measured_us:.1f} µs, latency "
                     f"{p.latency_us:.1f}, model {p.model_rate:.1f}, implied {p.implied_rate:.1f} "
                     f"({p.ratio:.2f}), on the wire {p.wire_rate:.1f}")
    lines += peer_copy_lines(points, arch)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from ..errors import InputError
    from ..toolargs import ToolParser
    ap = ToolParser(prog="python -m embsim.collectives.ll128_rate",
                    description="The one-node Ring/LL128 points' implied and marginal rates against "
                                "NCCL's LL128 bounds and the published SM peer-copy rates of the "
                                "curve's GPU (collective_notes.md).")
    ap.add_argument("curves", nargs="*", metavar="CURVE.yaml",
                    help=f"nccl-tests curve files (default: {', '.join(DEFAULT_CURVES)})")
    args = ap.parse_args(argv)
    paths = args.curves or [DATA_DIR / f"{name}.yaml" for name in DEFAULT_CURVES]
    try:
        text = "\n".join(report(p) for p in paths)
    except InputError as exc:          # bad input: one line, exit status 2
        print(f"{ap.prog}: error: {exc}", file=sys.stderr)
        return 2
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

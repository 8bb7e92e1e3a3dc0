"""Per-layer forward/backward times from a PyTorch profiler (Kineto) Chrome-trace JSON.

Layers are found two ways:
- `record_function("fwd:<layer>")` / `record_function("bwd:<layer>")` ranges (cat
  `user_annotation`); when only the forward range exists, the backward of a layer is the
  autograd work (`autograd::engine::evaluate_function: ...`) whose "Sequence number"
  matches an op recorded inside its forward range -- autograd gives a backward node the
  sequence number of the forward op that created it.
- `nn.Module: <Class>_<i>` ranges (profile(with_stack=True, with_modules=True)), the
  children of the outermost module; backward attributed by sequence number as above.

A layer's time is GPU kernel time when the profile holds CUDA kernels (kernels matched to
the launches made inside the range by their "correlation" id), CPU wall time otherwise.
Every occurrence of a range is one sample; a layer's time is the median of its samples.
"""

from __future__ import annotations

import bisect
import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..yamlio import MAX_NUMBER, read_text

# A real Kineto trace of a few steps is tens to hundreds of MB; beyond this it is not one.
MAX_PROFILE_BYTES = 1 << 30
MAX_WORLD = 1 << 20

FWD_PREFIX, BWD_PREFIX, MODULE_PREFIX = "fwd:", "bwd:", "nn.Module: "
BACKWARD_NODE = "autograd::engine::evaluate_function: "


class ProfileError(InputError):
    """A profile that cannot be read or holds no layer ranges."""


@dataclass(frozen=True)
class Event:
    name: str
    cat: str
    tid: object
    start: float                   # seconds
    end: float
    seq: int | None
    correlation: int | None


@dataclass(frozen=True)
class LayerSamples:
    name: str
    fwd_s: tuple[float, ...]
    bwd_s: tuple[float, ...]

    @property
    def fwd_median(self) -> float:
        return statistics.median(self.fwd_s)

    @property
    def bwd_median(self) -> float:
        return statistics.median(self.bwd_s) if self.bwd_s else 0.0


@dataclass(frozen=True)
class ProfileLayers:
    source: str
    timing: str                    # "gpu-kernels" | "cpu"
    layers: dict[str, LayerSamples]
    device: str
    host: str
    distributed: dict


def _events(data: dict, source: str) -> list[Event]:
    raw = data.get("traceEvents") if isinstance(data, dict) else data
    if not isinstance(raw, list):
        raise ProfileError(f"{source}: not a Chrome trace (no 'traceEvents' list)")
    out = []
    for e in raw:
        if not isinstance(e, dict) or e.get("ph") != "X" or "dur" not in e:
            continue
        args = e.get("args") or {}
        if not isinstance(args, dict):
            raise ProfileError(f"{source}: event {str(e.get('name'))[:80]!r}: 'args' must be an "
                               f"object, got {type(args).__name__}")
        try:
            ts, dur = float(e["ts"]), float(e["dur"])
        except (KeyError, TypeError, ValueError, OverflowError):
            raise ProfileError(f"{source}: event {str(e.get('name'))[:80]!r} has no numeric ts/dur") from None
        if not (math.isfinite(ts) and math.isfinite(dur)) or dur < 0 or abs(ts) > MAX_NUMBER:
            raise ProfileError(f"{source}: event {str(e.get('name'))[:80]!r}: ts {ts} / dur {dur} "
                               f"must be finite, dur >= 0")
        start = ts * 1e-6      # Chrome-trace times are microseconds
        end = start + dur * 1e-6
        seq = args.get("Sequence number")
        corr = args.get("correlation")
        out.append(Event(name=str(e.get("name", "")), cat=str(e.get("cat", "")), tid=e.get("tid"),
                         start=start, end=end, seq=seq if isinstance(seq, int) else None,
                         correlation=corr if isinstance(corr, int) else None))
    out.sort(key=lambda ev: (ev.start, -ev.end))
    return out


class _Index:
    """Look-ups over one profile: ops inside a range, kernels of a launch."""

    def __init__(self, events: list[Event]):
        self.events = events
        self.kernels: dict[int, float] = {}
        for ev in events:
            if ev.cat == "kernel" and ev.correlation is not None:
                self.kernels[ev.correlation] = self.kernels.get(ev.correlation, 0.0) + ev.end - ev.start
        self.cpu = [ev for ev in events if ev.cat not in ("kernel", "gpu_memcpy", "gpu_memset",
                                                         "gpu_user_annotation")]
        self.starts = [ev.start for ev in self.cpu]
        self.backward_nodes: dict[int, list[Event]] = {}
        for ev in self.cpu:
            if ev.name.startswith(BACKWARD_NODE) and ev.seq is not None:
                self.backward_nodes.setdefault(ev.seq, []).append(ev)

    @property
    def on_gpu(self) -> bool:
        return bool(self.kernels)

    def inside(self, outer: Event) -> list[Event]:
        out = []
        for i in range(bisect.bisect_left(self.starts, outer.start), len(self.cpu)):
            ev = self.cpu[i]
            if ev.start > outer.end:
                break
            if ev is not outer and ev.tid == outer.tid and ev.end <= outer.end:
                out.append(ev)
        return out

    def time(self, ranges: list[Event]) -> float:
        """CPU wall time of the ranges, or the GPU kernel time they launched."""
        if not self.on_gpu:
            return sum(r.end - r.start for r in ranges)
        total = 0.0
        for r in ranges:
            for ev in [r] + self.inside(r):
                if ev.correlation is not None:
                    total += self.kernels.get(ev.correlation, 0.0)
        return total

    def backward_of(self, forward: Event) -> list[Event]:
        seqs = sorted({ev.seq for ev in self.inside(forward) if ev.seq is not None})
        nodes = [n for s in seqs for n in self.backward_nodes.get(s, [])]
        # A node nested in another matched node is already counted by its parent.
        return [n for n in nodes if not any(o is not n and o.start <= n.start and n.end <= o.end
                                            for o in nodes)]


def _module_ranges(index: _Index) -> dict[str, list[Event]]:
    modules = [ev for ev in index.cpu if ev.name.startswith(MODULE_PREFIX)]
    depth = {}
    for ev in modules:
        depth[id(ev)] = sum(1 for o in modules if o is not ev and o.tid == ev.tid
                            and o.start <= ev.start and ev.end <= o.end)
    wanted = 1 if any(d == 1 for d in depth.values()) else 0
    out: dict[str, list[Event]] = {}
    for ev in modules:
        if depth[id(ev)] == wanted:
            out.setdefault(ev.name[len(MODULE_PREFIX):], []).append(ev)
    return out


def profile_layers(data: dict, source: str, rename: dict[str, str] | None = None) -> ProfileLayers:
    index = _Index(_events(data, source))
    forward: dict[str, list[Event]] = {}
    backward: dict[str, list[Event]] = {}
    for ev in index.cpu:
        if ev.cat == "user_annotation" or ev.cat == "cpu_op" and ":" in ev.name:
            if ev.name.startswith(FWD_PREFIX):
                forward.setdefault(ev.name[len(FWD_PREFIX):], []).append(ev)
            elif ev.name.startswith(BWD_PREFIX):
                backward.setdefault(ev.name[len(BWD_PREFIX):], []).append(ev)
    if not forward:
        forward = _module_ranges(index)
    if not forward:
        raise ProfileError(f"{source}: no layer ranges: wrap layers in "
                           f"record_function('fwd:<layer>') or profile with "
                           f"with_stack=True, with_modules=True")
    rename = rename or {}
    layers = {}
    for name, ranges in forward.items():
        fwd = tuple(index.time([r]) for r in ranges)
        if name in backward:
            bwd = tuple(index.time([r]) for r in backward[name])
        else:
            bwd = tuple(t for t in (index.time(index.backward_of(r)) for r in ranges) if t > 0)
        out_name = rename.get(name, name)
        layers[out_name] = LayerSamples(name=out_name, fwd_s=fwd, bwd_s=bwd)
    unknown = set(rename) - set(forward)
    if unknown:
        raise ProfileError(f"{source}: --rename names {', '.join(sorted(unknown))} not found among "
                           f"the profile's layers ({', '.join(forward)})")
    top = data if isinstance(data, dict) else {}
    props = top.get("deviceProperties") or []
    if not isinstance(props, list) or not all(isinstance(p, dict) for p in props):
        raise ProfileError(f"{source}: 'deviceProperties' must be a list of objects")
    device = str(props[0].get("name", "gpu")) if props and index.on_gpu else "cpu"
    distributed = top.get("distributedInfo") or {}
    if not isinstance(distributed, dict):
        raise ProfileError(f"{source}: 'distributedInfo' must be an object, got "
                           f"{type(distributed).__name__}")
    world = distributed.get("world_size", 1)
    if world is not None and (isinstance(world, bool) or not isinstance(world, int)
                              or not 1 <= world <= MAX_WORLD):
        raise ProfileError(f"{source}: distributedInfo.world_size must be an integer "
                           f"1..{MAX_WORLD}, got {world!r}")
    return ProfileLayers(source=source, timing="gpu-kernels" if index.on_gpu else "cpu",
                         layers=layers, device=device, host=str(top.get("host_name", "")),
                         distributed=dict(distributed))


def load_profile(path: str | Path, rename: dict[str, str] | None = None) -> ProfileLayers:
    path = Path(path)
    text = read_text(path, "profile", ProfileError, max_bytes=MAX_PROFILE_BYTES)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProfileError(f"{path} (line {exc.lineno}): not valid JSON: {exc.msg} "
                           f"(truncated profile?)") from None
    except ValueError as exc:
        # a number too long for Python's int (more than 4300 digits) is no JSONDecodeError
        raise ProfileError(f"{path}: not valid JSON: {str(exc).split(':')[0]}") from None
    except RecursionError:
        raise ProfileError(f"{path}: not a Chrome trace (JSON nested too deeply)") from None
    return profile_layers(data, str(path), rename)

"""Simulated vs measured nccl-tests: the error table behind `embsim validate`.

Ground truth is the packaged copy of published nccl-tests results
(embsim/validation_data/*.yaml). For each curve we simulate every size with the NCCL
version and `-g` the file states (default 2.30, -g 1) and compare times; the acceptance
metrics are the mean and the max of |simulated/measured - 1| over sizes >= 64 KiB.
Single points marked `size: large` are evaluated at 8 GiB; `nodes: many` at 16 nodes
(NCCL's tables treat every count >= 4 alike).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from embsim.curves import ErrorSummary, error_summary
from embsim.errors import InputError
from embsim.yamlio import get, load_yaml

from . import nccl_tests as nt
from .model import CollectiveModel
from .nccl_env import env_from_text, settings
from .nccl_transport import noted_settings, refuse_unmodelled
from .releases import ReleaseView, proto_filter, release_view
from .validation_file import MIN_SIZE, check_curve_file, check_points_file

DATA_DIR = Path(__file__).resolve().parent.parent / "validation_data"
LARGE = 8 << 30
MANY_NODES = 16


@dataclass(frozen=True)
class PointError:
    size: int
    measured_busbw: float
    simulated_busbw: float
    algo: str
    proto: str

    @property
    def error(self) -> float:
        """simulated/measured - 1 in time (= measured/simulated busbw - 1)."""
        return self.measured_busbw / self.simulated_busbw - 1.0


@dataclass(frozen=True)
class CurveError:
    name: str
    system: str
    op: str
    nccl: str
    points: tuple[PointError, ...] = field(default_factory=tuple)

    @property
    def summary(self) -> ErrorSummary:
        return error_summary(p.error for p in self.points if p.size >= MIN_SIZE)

    @property
    def mean_error(self) -> float:
        return self.summary.mean

    @property
    def max_error(self) -> float:
        return self.summary.max


def _gpus_per_process(how: str) -> int:
    m = re.search(r"-g\s+(\d+)", how or "")
    return int(m.group(1)) if m else 1


def _env(how: str, name: str) -> str | None:
    """NCCL_ALGO / NCCL_PROTO as the measurement's command line set them (NAME=VALUE), or as
    NCCL's own log says (`NAME set by environment to VALUE`): nccl_env.settings."""
    return settings(how).get(name)


def run_filters(text: str) -> tuple[str | None, str | None]:
    """(NCCL_ALGO, NCCL_PROTO) a run's text or NCCL INFO lines set, NCCL_NVLS_ENABLE=0 applied."""
    return _algo(text), _env(text, "NCCL_PROTO")


def _algo(how: str) -> str | None:
    """NCCL_ALGO as the measurement set it, with NCCL_NVLS_ENABLE=0 applied: ncclNvlsInit
    (transport/nvls.cc) then leaves nvlsSupport at 0, so neither NVLS nor NVLSTree can run."""
    algo = _env(how, "NCCL_ALGO")
    if _env(how, "NCCL_NVLS_ENABLE") != "0":
        return algo
    nvls = ("NVLS", "NVLSTree")
    if algo is None:
        return "^" + ",".join(nvls)
    names = [t for t in algo.lstrip("^").split(",") if t]
    if algo.startswith("^"):
        return "^" + ",".join(names + [a for a in nvls if a.lower() not in {n.lower() for n in names}])
    kept = [t for t in names if t.lower() not in ("nvls", "nvlstree", "nvls_tree")]
    return ",".join(kept) if kept else algo


def _nodes(value) -> int:
    return MANY_NODES if value == "many" else int(value)


def _topology(preset: str, nodes: int, gpus: int, spec: str | None = None, key: str = "preset"):
    """The file's preset shaped like the measurement, or the user's --topology SPEC. `key`
    names the file's key in errors about the preset."""
    from embsim.topology import load_topology
    if spec is None:
        return load_topology(f"{preset}:{nodes}x{gpus}", origin=key)
    topo = load_topology(spec)
    if topo.n_gpus != nodes * gpus and not re.search(r"(^\d+x\d+$)|(:\d+x\d+$)", spec.strip()):
        topo = load_topology(f"{spec}:{nodes}x{gpus}")
    if topo.n_gpus != nodes * gpus:
        raise InputError(f"--topology {spec}: {topo.n_gpus} GPUs, the measurement used "
                         f"{nodes}x{gpus}; pass --topology {spec}:{nodes}x{gpus}")
    return topo


def _preset(d: dict, path) -> str:
    """A curve's or point's preset, its topology file found next to the validation file when
    it is not where embsim runs (topology.spec_beside)."""
    from embsim.topology import spec_beside
    return spec_beside(d["preset"], path)


def _simulate(preset, nodes, gpus, op, sizes, release: ReleaseView, how, proto=None, algo=None,
              spec=None, where="how:", key="preset"):
    """(rows, note): the simulated nccl-tests rows, and what the output must say about the
    release that stood in for the measurement's and about the topology's view, if anything.
    The buffer/chunk sizes the measurement set (NCCL_BUFFSIZE=... in `how`) drive it."""
    topo = _topology(preset, nodes, gpus, spec, key)
    refuse_unmodelled(how, topo, where.rstrip(":"), release.version)
    model = CollectiveModel(topo, algo=algo, proto=proto_filter(release, proto),
                            nccl_version=release.version, nccl_env=env_from_text(how, where),
                            threshold_choice=release.threshold_choice)
    per_process = _gpus_per_process(how)
    rows = nt.run(model, op, sizes, "float", gpus_per_process=per_process,
                  source=where.rstrip(":"))
    notes = (release.note, *model.notes, noted_settings(how), nt.launch_note(per_process))
    return rows, "; ".join(n for n in notes if n)


def file_release(d: dict) -> ReleaseView:
    """The release a validation curve or point ran: its `nccl:`, else the one its
    `published:` date bounds, else the default (releases.release_view)."""
    return release_view(str(d.get("nccl", "unknown")), d.get("published"))


def _system(text: str, note: str) -> str:
    return f"{text} [{note}]" if note else text


def curve_errors(path: str | Path, topology: str | None = None) -> CurveError:
    doc = load_yaml(path)
    check_curve_file(doc)
    d = doc.data
    release = file_release(d)
    sizes = sorted(int(s) for s in d["busbw"])
    how = get(doc, (), d, "how", str, "")     # the command line, NCCL_* settings included
    rows, note = _simulate(_preset(d, path), _nodes(d["nodes"]), int(d["gpus_per_node"]), d["op"], sizes,
                           release, how, _env(how, "NCCL_PROTO"), _algo(how), spec=topology,
                           where=f"{path}: how:")
    pts = tuple(PointError(r.size, float(d["busbw"][r.size]), r.busbw, r.algo, r.proto) for r in rows)
    return CurveError(Path(path).stem, _system(d.get("system", ""), note), d["op"], release.label, pts)


def single_point_errors(path: str | Path, topology: str | None = None) -> list[CurveError]:
    doc = load_yaml(path)
    check_points_file(doc)
    out = []
    for i, p in enumerate(doc.data["points"]):
        size = LARGE if p.get("size") == "large" else int(p["size"])
        nodes = _nodes(p["nodes"])
        how = get(doc, ("points", i), p, "how", str, "")
        proto = _env(how, "NCCL_PROTO")
        algo = _algo(how)
        # A point measured with NVLS switched off says so in its system line.
        if algo is None and "NVLS off" in str(p.get("system", "")):
            algo = "^NVLS,NVLSTree"
        release = file_release(p)
        rows, note = _simulate(_preset(p, path), nodes, int(p["gpus_per_node"]), p["op"], [size],
                               release, how, proto, algo, topology, f"{path}: points[{i}].how:",
                               f"points[{i}].preset")
        r = rows[0]
        if "busbw_per_nic" in p:
            lo, _, hi = str(p["busbw_per_nic"]).partition("-")
            measured = (float(lo) + float(hi or lo)) / 2
            # Maintainers' reading (nccl-tests#130): busbw ~ N/(N-1) x per-NIC bandwidth.
            simulated = r.busbw * (nodes - 1) / nodes
        else:
            measured, simulated = float(p["busbw"]), r.busbw
        pt = PointError(r.size, measured, simulated, r.algo, r.proto)
        # named by the file (single-points.yaml -> single-points[i]) so that two point files
        # do not share names
        out.append(CurveError(f"{Path(path).stem}[{i}]", _system(p.get("system", ""), note), p["op"],
                              release.label, (pt,)))
    return out


def validate_all(data_dir: str | Path = DATA_DIR, topology: str | None = None) -> list[CurveError]:
    """Every curve and single point of the packaged (or given) validation data, each on
    its file's preset or, given `topology`, on that spec."""
    data_dir = Path(data_dir)
    files = sorted(data_dir.glob("*.yaml"))
    if not files:
        raise InputError(f"{data_dir}: no validation files (*.yaml)")
    out: list[CurveError] = []
    for f in files:
        doc = load_yaml(f)
        out += single_point_errors(f, topology) if "points" in doc.data else [curve_errors(f, topology)]
    return out


def format_report(results: list[CurveError]) -> str:
    lines = [f"{'curve':<34} {'op':<11} {'nccl':<9} {'mean':>8} {'max':>8}  system"]
    for c in results:
        lines.append(f"{c.name:<34} {c.op:<11} {c.nccl:<9} {c.mean_error:>8.1%} {c.max_error:>8.1%}  {c.system}")
    return "\n".join(lines)


if __name__ == "__main__":
    from ..toolargs import no_arguments
    no_arguments("embsim.collectives.validation", __doc__)
    res = validate_all()
    print(format_report(res))
    for c in res:
        if len(c.points) > 1:
            print(c.name)
            for p in c.points:
                print(f"   {p.size:>12} meas {p.measured_busbw:8.2f} sim {p.simulated_busbw:8.2f} "
                      f"{p.error:+7.1%} {p.algo} {p.proto}")

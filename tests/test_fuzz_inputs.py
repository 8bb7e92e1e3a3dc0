"""Property-based fuzzing of every kind of user input through the real command line.

Each case mutates one shipped or typical input (a topology preset, a model file, a trace,
a Kineto profile, an nccl-tests log, a sweep file, or a command's flags) and runs the
command that reads it. The property: the command exits 0, or exits 2 with exactly one
line on stderr (`embsim: error: ...`); it never raises (a traceback) and never runs past
a time limit (a hang). Validation commands may also exit 1 (an error threshold).

`make test` runs about a thousand cases in a few tens of seconds (derandomized, so CI sees
the same cases every run); EMBSIM_FUZZ_EXAMPLES=N runs N per input kind
(benchmarks/fuzz_inputs.sh runs a long session).
"""

from __future__ import annotations

import copy
import io
import json
import math
import os
import signal
import contextlib
import warnings
from pathlib import Path

import pytest
import yaml

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from embsim.cli import main  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = int(os.environ.get("EMBSIM_FUZZ_EXAMPLES", "60"))
CASE_LIMIT_S = float(os.environ.get("EMBSIM_FUZZ_CASE_LIMIT_S", "30"))
# no shrinking: a failure is reported with the case that found it, and CI stays fast
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck),
                    phases=[Phase.explicit, Phase.generate])

# Values people (and attackers) put where a number or a name belongs.
NASTY = [float("nan"), float("inf"), float("-inf"), 0, -1, -0.5, 0.5, 1, 2, 3, 7, 1e-300,
         1e300, 10 ** 30, 2 ** 63, 1.5, True, False, None, "", "abc", "1e6", [], {}, [1, 2],
         {"a": 1}, "x" * 300, "../../etc/passwd"]

CASES = {"ran": 0}


class Hang(Exception):
    pass


def _alarm(signum, frame):
    raise Hang()


def run_cli(args: list[str], allowed=(0, 2)) -> tuple[int, str]:
    """Run the CLI in-process; fail on a traceback, a hang, or a multi-line error."""
    CASES["ran"] += 1
    out, err = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, CASE_LIMIT_S)
    try:
        # an accepted input must not overflow or divide by zero on the way either
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            rc = main(args)
    except Hang:
        pytest.fail(f"hang: embsim {' '.join(args)} ran past {CASE_LIMIT_S} s")
    except SystemExit as exc:      # click's own exits in standalone paths
        rc = exc.code if isinstance(exc.code, int) else 1
    except BaseException as exc:   # noqa: BLE001 -- exactly what the property forbids
        pytest.fail(f"traceback: embsim {' '.join(args)}: {type(exc).__name__}: {exc}")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    text = err.getvalue().strip()
    if os.environ.get("EMBSIM_FUZZ_VERBOSE"):
        print(f"fuzz rc={rc} {' '.join(args)[:80]} {text[:150]!r}")
    assert rc in allowed, f"embsim {' '.join(args)}: exit {rc}: {text[-500:]}"
    if rc == 0 and "--json" in args:
        # accepted input must give sane figures: nothing NaN or infinite
        bad = [v for v in _numbers(json.loads(out.getvalue())) if not math.isfinite(v)]
        assert not bad, f"embsim {' '.join(args)}: non-finite output {bad[:3]}"
    if rc == 2:
        lines = text.splitlines()
        assert len(lines) == 1 and lines[0].startswith("embsim: error: "), \
            f"embsim {' '.join(args)}: exit 2 but stderr is {text!r}"
    return rc, text


def _numbers(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, list):
        for v in value:
            yield from _numbers(v)
    elif isinstance(value, float):
        yield value


# ------------------------------------------------------------ mutating documents

def _paths(data, prefix=()):
    """Every key path of a nested document (mappings and lists)."""
    yield prefix
    if isinstance(data, dict):
        for k, v in data.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _paths(v, prefix + (i,))


def _set(data, path, value):
    if not path:
        return value
    parent = data
    for p in path[:-1]:
        parent = parent[p]
    if value is _DELETE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return data


_DELETE = object()


NUMERIC = [float("nan"), float("inf"), float("-inf"), 0, -1, 1e-300, 1e300, 10 ** 30, 0.5, 1.5]


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@st.composite
def mutated(draw, original):
    """The document with 1-3 values replaced by nasty ones, deleted, or scaled. Numbers
    are the usual victims (most keys are numbers), so numeric leaves are chosen first."""
    data = copy.deepcopy(original)
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(data) if p]
        if not paths:
            break
        leaves = []
        for p in paths:
            node = data
            for k in p:
                node = node[k]
            if _is_number(node):
                leaves.append(p)
        path = draw(st.sampled_from(leaves if leaves and draw(st.integers(0, 3)) else paths))
        parent = data
        for p in path[:-1]:
            parent = parent[p]
        current = parent[path[-1]]
        choice = draw(st.integers(0, 5))
        if choice == 0:
            value = _DELETE
        elif choice in (1, 2) and _is_number(current):
            value = current * draw(st.sampled_from([-1, 0, 1e-9, 10, 1e6, 1e12, 1e30]))
            if isinstance(current, int) and math.isfinite(value) and abs(value) < 1e18:
                value = int(value)
        elif choice in (3, 4):
            value = draw(st.sampled_from(NUMERIC))
        else:
            value = draw(st.sampled_from(NASTY))
        data = _set(data, path, value)
    return data


def _dump_yaml(data) -> str:
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


@st.composite
def text_damage(draw, text):
    """Raw text damage: truncation, a duplicated line, YAML oddities, a torn byte."""
    kind = draw(st.integers(0, 5))
    lines = text.splitlines(keepends=True)
    if kind == 0:
        return text[:draw(st.integers(0, len(text)))]
    if kind == 1 and lines:
        i = draw(st.integers(0, len(lines) - 1))
        return "".join(lines[:i + 1] + [lines[i]] + lines[i + 1:])
    if kind == 2:
        return draw(st.sampled_from(["---\n", "", "<<: {a: 1}\n", "? [1, 2]\n: 3\n",
                                     "a: &x [1, *x]\n", "[" * 3000 + "]" * 3000,
                                     "a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                                     "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                                     "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"]))
    if kind == 3 and lines:
        i = draw(st.integers(0, len(lines) - 1))
        return "".join(lines[:i] + ["\t\x00\n"] + lines[i:])
    if kind == 4:
        return text + draw(st.sampled_from(["\nextra: 1\n", "\n- 1\n", "\n: :\n"]))
    return text.replace(":", ": .nan #", 1)


def _write(tmp_path_factory, name: str, content: str | bytes) -> Path:
    folder = tmp_path_factory.mktemp("fuzz")
    path = folder / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8", errors="surrogateescape")
    return path


def _load(rel: str):
    return yaml.safe_load((ROOT / rel).read_text())


# ------------------------------------------------------------ the properties

PRESETS = sorted(p.name for p in (ROOT / "topologies").glob("*.yaml"))


@pytest.mark.parametrize("preset", PRESETS)
def test_fuzz_topology_files(preset, tmp_path_factory):
    original = _load(f"topologies/{preset}")

    @SETTINGS
    @given(data=st.one_of(mutated(original).map(_dump_yaml),
                          text_damage((ROOT / "topologies" / preset).read_text())))
    def case(data):
        path = _write(tmp_path_factory, "node.yaml", data)
        rc, _ = run_cli(["topology", "show", str(path)])
        if rc == 0:
            run_cli(["simulate", "--topology", f"{path}:1x2", "--model", "tiny-lm",
                     "--iterations", "2", "--json"])
            run_cli(["nccl-tests", "--topology", f"{path}:1x2", "--op", "all_reduce",
                     "-b", "8", "-e", "1M", "-f", "4", "--json"])
    case()


def test_fuzz_model_file(tmp_path_factory):
    original = _load("embsim/workload/zoo/tiny-lm.yaml")

    @SETTINGS
    @given(data=st.one_of(mutated(original).map(_dump_yaml),
                          text_damage((ROOT / "embsim/workload/zoo/tiny-lm.yaml").read_text())))
    def case(data):
        path = _write(tmp_path_factory, "model.yaml", data)
        run_cli(["simulate", "--topology", "dgx-h100:1x2", "--model", str(path),
                 "--iterations", "2", "--json"])
        run_cli(["model", "show", str(path)])
    case()


TRACES = sorted(p.name for p in (ROOT / "traces").glob("*.yaml"))


@pytest.mark.parametrize("trace", TRACES)
def test_fuzz_trace_files(trace, tmp_path_factory):
    text = (ROOT / "traces" / trace).read_text()
    original = yaml.safe_load(text)
    model = original["model"]

    @SETTINGS
    @given(data=st.one_of(mutated(original).map(_dump_yaml), text_damage(text)))
    def case(data):
        path = _write(tmp_path_factory, "trace.yaml", data)
        run_cli(["simulate", "--trace", str(path), "--topology", "local-cpu", "--model", model,
                 "--batch", "8", "--seq", "32", "--iterations", "2", "--json"])
    case()


def _profile() -> dict:
    """A small Kineto-style trace with fwd:/bwd: ranges for tiny-lm's layers."""
    events, t = [], 0.0
    for step in range(3):
        for layer in ("word_embedding", "lstm", "decoder", "loss"):
            for phase, dur in (("fwd", 100.0), ("bwd", 180.0)):
                events.append({"ph": "X", "cat": "user_annotation", "name": f"{phase}:{layer}",
                               "ts": t, "dur": dur, "tid": 1, "pid": 1,
                               "args": {"Sequence number": step}})
                t += dur + 5
    return {"traceEvents": events, "deviceProperties": [], "distributedInfo": {"world_size": 2},
            "host_name": "fuzz"}


def test_fuzz_kineto_profiles(tmp_path_factory):
    original = _profile()
    text = json.dumps(original)

    @SETTINGS
    @given(data=st.one_of(mutated(original).map(json.dumps),
                          text_damage(text),
                          st.sampled_from(["[" * 100_000 + "]" * 100_000,
                                           json.dumps({**original, "args": 1}),
                                           json.dumps({**original, "distributedInfo": [1]}),
                                           json.dumps({**original, "deviceProperties": {"a": 1}})])))
    def case(data):
        path = _write(tmp_path_factory, "profile.json", data)
        out = path.with_name("t.yaml")
        rc, _ = run_cli(["import-profile", str(path), "--model", "tiny-lm", "--topology",
                         "local-cpu", "--batch", "8", "--seq", "32", "--out", str(out)])
        if rc == 0:
            run_cli(["simulate", "--trace", str(out), "--topology", "local-cpu",
                     "--model", "tiny-lm", "--batch", "8", "--seq", "32", "--iterations", "2"])
    case()


@st.composite
def log_damage(draw, text):
    lines = text.splitlines(keepends=True)
    rows = [i for i, line in enumerate(lines) if line.strip() and not line.startswith("#")
            and line.split()[0].isdigit()]
    i = draw(st.sampled_from(rows))
    tokens = lines[i].split()
    j = draw(st.integers(0, len(tokens) - 1))
    tokens[j] = draw(st.sampled_from(["0", "-1", "nan", "inf", "1e300", "N/A", "abc",
                                      "99999999999999999999999", "0.0", ""]))
    lines[i] = "  ".join(tokens) + "\n"
    return "".join(lines)


def test_fuzz_nccl_tests_logs(tmp_path_factory):
    text = (ROOT / "tests/imports/fixtures/h100-2x8-all_reduce.log").read_text()

    @SETTINGS
    @given(data=st.one_of(log_damage(text), text_damage(text)))
    def case(data):
        path = _write(tmp_path_factory, "all_reduce.log", data)
        out = path.with_name("t.yaml")
        run_cli(["import-nccl-tests", str(path), "--out", str(out)])
        run_cli(["validate", "--nccl-tests", str(path), "--topology", "dgx-h100:2x8"],
                allowed=(0, 1, 2))
    case()


SWEEP = {"name": "fuzz", "base": {"model": "tiny-lm", "iterations": 2, "tensor_parallel": 1,
                                  "context_parallel": 1, "pipeline_parallel": 1},
         "grid": {"topology": ["dgx-h100:1x2"], "strategy": ["allreduce", "embrace"],
                  "hardware": {"nic_gbit": [100]}}}


def test_fuzz_sweep_files(tmp_path_factory):
    """The sweep file is checked whole before any point runs: only the checks run here (a
    Dask cluster per case would take seconds); test_sweep runs real sweeps."""
    from embsim.errors import InputError
    from embsim.sweep import load_sweep
    from embsim.sweep.check import check_points

    @SETTINGS
    @given(data=st.one_of(mutated(SWEEP).map(_dump_yaml), text_damage(_dump_yaml(SWEEP))))
    def case(data):
        CASES["ran"] += 1
        path = _write(tmp_path_factory, "sweep.yaml", data)
        try:
            spec = load_sweep(path)
            check_points(list(spec.points))
        except InputError as exc:
            assert "\n" not in str(exc)
    case()


NASTY_FLAG = ["nan", "inf", "-inf", "0", "-1", "1e300", "1e30", "abc", "", "1.5"]
# per flag: values a user might mean, then the nasty ones (so deep paths are reached too)
FLAG_CHOICES = {
    "--batch": ["1", "3", "64", "1000000", "2000000"],
    "--seq": ["1", "7", "512", "1000000"],
    "--iterations": ["2", "3", "1000", "1001"],
    "--seed": ["0", "7", str(2 ** 63)],
    "--interference": ["0", "0.3", "100", "101"],
    "--comm-interference": ["0", "1.5", "100"],
    "--zipf": ["0", "0.5", "1.05", "2", "10", "11"],
    "--straggler": ["gpu:0:2", "gpu:1:0.5", "node:0:3", "gpu:0:nan", "gpu:0:0", "node:9:2",
                    "gpu:5:2", "gpu:0:1e7"],
    "--nccl-algo": ["Ring", "Tree", "^NVLS", "Ring,Tree", "bogus"],
    "--nccl-proto": ["Simple", "LL", "^LL128", "bogus"],
    "--topology": ["1x1", "1x2", "2x2", "dgx-a100:1x2", "local-cpu", "pcie-rtx3090:1x2", "99999x8"],
    "--jitter": ["normal:0.1", "lognormal:0.2", "uniform:0.2", "seq:8", "bucket:4", "shuffle",
                 "trace", "normal:nan", "lognormal:inf", "uniform:-1", "seq:1e300", "bucket:0"],
    "--accumulate": ["1", "2", "8", "1024", "1025"],
    "--dtype": ["fp32", "tf32", "bf16", "fp16", "fp8", "BF16", "float16"],
    "--recompute": ["none", "full", "every:2", "every:0", "every:x", "selective"],
    "--grad-compress": ["none", "fp16", "bf16", "BF16", "float16", "fp8", "powersgd"],
    # parallel sizes: tiny-lm has no blocks to split, so every size > 1 is a one-line refusal
    "--tensor-parallel": ["1", "2", "3", "1024", "1025"],
    "--pipeline-parallel": ["1", "2", "5", "1024", "1025"],
    "--context-parallel": ["1", "2", "3", "1024", "1025"],
}
FLAGS = sorted(FLAG_CHOICES)
OPTION_VALUES = ["1", "4e6", "64e6", "rows", "cols", "off", "on", "nan", "inf", "0", "-1", "1e300",
                 "abc", "3", "100"]
OPTION_KEYS = ["bucket_bytes", "partition_bytes", "credit_bytes", "shard", "depth", "width_factor",
               "reorder", "sizing", "bogus"]


@st.composite
def flag_value(draw):
    flag = draw(st.sampled_from(FLAGS))
    values = FLAG_CHOICES[flag]
    return flag, draw(st.sampled_from(values) if draw(st.integers(0, 3)) else st.sampled_from(NASTY_FLAG))


def test_fuzz_simulate_flags():
    @SETTINGS
    @given(flags=st.lists(flag_value(), min_size=1, max_size=3),
           options=st.lists(st.tuples(st.sampled_from(OPTION_KEYS), st.sampled_from(OPTION_VALUES)),
                            max_size=2),
           strategy=st.sampled_from(["allreduce", "allgather", "ps", "s2reducer", "embrace", "fsdp",
                                     "distopt"]),
           scheduler=st.sampled_from(["fifo", "priority", "embrace-2d"]))
    def case(flags, options, strategy, scheduler):
        args = ["simulate", "--model", "tiny-lm", "--topology", "dgx-h100:1x2", "--iterations", "2",
                "--strategy", strategy, "--scheduler", scheduler, "--json"]
        for flag, value in flags:
            args += [flag, value]
        for key, value in options:
            args += ["--option", f"{key}={value}"]
        run_cli(args)
    case()


FLAG_VALUES = st.sampled_from(NASTY_FLAG + ["2", "3", "1000000"])


def test_fuzz_nccl_tests_flags():
    sizes = st.one_of(st.sampled_from(["8", "1K", "1M", "128M", "1G"]), FLAG_VALUES)

    @SETTINGS
    @given(b=sizes, e=sizes, f=st.sampled_from(["2", "1.0000001", "1", "0", "nan", "inf", "-2",
                                                "1e300", "1.5"]))
    def case(b, e, f):
        run_cli(["nccl-tests", "--topology", "dgx-h100:1x8", "--op", "all_reduce",
                 "-b", b, "-e", e, "-f", f])
    case()


@pytest.mark.parametrize("value", ["-1", "-0.5", "11", "1e300"])
def test_zipf_outside_its_stated_range_names_the_flag(value, capsys):
    """--zipf's help states 0 <= s <= 10, and the refusal says the same and names the flag
    (0, uniform, is in it since 2026-12-06: a synthetic benchmark's ids)."""
    rc = main(["simulate", "--model", "tiny-lm", "--topology", "1x2", "--iterations", "2",
               "--zipf", value])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1, err
    assert "'--zipf'" in err and "0 <= s <= 10" in err, err


def test_zipf_help_states_the_range(capsys):
    with contextlib.suppress(SystemExit):
        main(["simulate", "--help"])
    assert "0 <= s <= 10" in " ".join(capsys.readouterr().out.split())


def test_the_harness_catches_a_traceback_and_a_bad_exit(monkeypatch):
    """The property must be able to fail: a command that raises, or exits 2 with a
    traceback-like multi-line message, is reported."""
    import embsim.topology.clusterspec as clusterspec

    def broken(spec):
        raise ZeroDivisionError("boom")
    monkeypatch.setattr(clusterspec, "load_topology", broken)
    import embsim.commands.topology as topology_command
    monkeypatch.setattr(topology_command, "load_topology", broken, raising=False)
    with pytest.raises(pytest.fail.Exception, match="traceback"):
        run_cli(["topology", "show", "dgx-h100"])


def test_fuzz_ran_cases():
    """Printed for the record (pytest -s): how many CLI cases the session ran."""
    print(f"fuzz: {CASES['ran']} cases")

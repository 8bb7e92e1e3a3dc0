"""Property-based fuzzing of the trainer inputs: --padding, --lengths (and ,ratio:SIGMA),
their combinations with --jitter / --corpus / --seq / --accumulate, zoo `defaults:` keys
(global_batch, accumulate_sync, lengths, padding, jitter, options, optimizer_options), validation
files' `embsim:` blocks, --nccl-env and the NCCL env lines of logs and validation files'
`how`, and the GPU compute keys of a node-type file (l2_gbps, gemm_fraction, hbm_fraction).

The property is test_fuzz_inputs.py's (run_cli): exit 0, or 2 with one `embsim: error:`
line; never a traceback or a hang; an accepted --json run gives finite figures.
EMBSIM_FUZZ_EXAMPLES=N runs N cases per property (benchmarks/fuzz_inputs.sh).
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

pytest.importorskip("hypothesis")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from test_fuzz_inputs import (CASES, NASTY, ROOT, SETTINGS, _dump_yaml, _load, _write,  # noqa: E402
                              mutated, run_cli, text_damage)

# What a user might mean, then malformed forms (empty, zero, negative, huge, NaN/inf, wrong
# type, unknown names, a bin wider than --seq, ALIGN 0, a negative sigma).
PADDING = ["max", "longest", "longest:8", "bins:64", "bins:64:8", "bins:16:8", "packed",
           "bins:1024", "bins:7", "bins:64:0", "longest:0", "bins:0", "bins:-64", "bins:1e3",
           "longest:nan", "longest:inf", "bins:64:8:8", "max:1", "packed:1", "", "bogus", "BINS:64",
           "bins:128:4096", "longest:4096", "longest:4097", "bins:99999999999999999999", "bins:",
           "longest:-8", ":", "bins:64:"]
LENGTHS = ["wikipedia", "squad-1.1", "wikipedia,ratio:0.15", "squad-1.1,ratio:0", "lognormal:29:16",
           "lognormal:29:16:50", "lognormal:29.05:16.2,ratio:0.151", "lognormal:0:1",
           "lognormal:1e300:1e300", "lognormal:1e-300:1", "lognormal:10:1e300", "lognormal:10:5:0.5",
           "lognormal:10:5:1", "lognormal:nan:1", "lognormal:-5:1", "lognormal:inf:1",
           "lognormal:1e6:1e6", "lognormal:1:1e6", "wikipedia,ratio:-1", "wikipedia,ratio:nan",
           "wikipedia,ratio:inf", "wikipedia,ratio:1e300", "wikipedia,ratio:50", "wikipedia,ratio:",
           "wikipedia,", "bogus", "", ",ratio:0.1", "lognormal:10", "lognormal:10:5:1:2",
           "wikipedia,ratio:0.1,ratio:0.2", "Wikipedia", "../datasets/wikipedia", "lognormal:3e4:3e4",
           "wikipedia,ratio:1"]
TRAINER_FLAGS = {
    "--padding": PADDING,
    "--lengths": LENGTHS,
    "--jitter": ["none", "maxtokens", "bucket:4", "shuffle", "seq:8", "normal:0.05", "", "bucket:1000000"],
    "--seq": ["8", "64", "128", "512", "100", "1", "4096", "100000"],
    "--batch": ["1", "2", "16", "64"],
    "--accumulate": ["1", "2", "8", "0", "-1", "1024", "1025", "abc"],
    "--accumulate-sync": ["last", "every", "bogus", ""],
    "--seed": ["0", "1", "-1"],
    "--corpus": ["@corpus", "@empty", "@missing"],
}
MODELS = ["tiny-lm", "bert-base", "bert-large"]


def _count(name: str) -> None:
    CASES[name] = CASES.get(name, 0) + 1


@st.composite
def trainer_flags(draw):
    flags = draw(st.lists(st.sampled_from(sorted(TRAINER_FLAGS)), min_size=1, max_size=4, unique=True))
    # padding and lengths are what this file is about: most cases give both
    if draw(st.integers(0, 2)):
        flags = sorted(set(flags) | {"--padding", "--lengths"})
    return [(f, draw(st.sampled_from(TRAINER_FLAGS[f]))) for f in flags]


@pytest.fixture(scope="module")
def corpus_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("corpus")
    text = folder / "corpus.txt"
    text.write_text("".join(" ".join(["tok"] * n) + "\n" for n in (3, 17, 40, 9, 28, 60, 1, 12) * 8))
    empty = folder / "empty.txt"
    empty.write_text("\n\n")
    return {"@corpus": str(text), "@empty": str(empty), "@missing": str(folder / "no-such-file")}


def test_fuzz_padding_and_lengths_flags(corpus_files):
    @SETTINGS
    @given(model=st.sampled_from(MODELS), flags=trainer_flags())
    def case(model, flags):
        _count("padding/lengths flags")
        args = ["simulate", "--model", model, "--topology", "dgx-a100:1x2", "--iterations", "2", "--json"]
        for flag, value in flags:
            args += [flag, corpus_files.get(value, value)]
        run_cli(args)
    case()


NCCL_NAMES = ["NCCL_BUFFSIZE", "NCCL_LL_BUFFSIZE", "NCCL_LL128_BUFFSIZE", "NCCL_P2P_NET_CHUNKSIZE",
              "NCCL_P2P_NVL_CHUNKSIZE", "NCCL_P2P_PCI_CHUNKSIZE", "nccl_buffsize", "NCCL_ALGO",
              "NCCL_BOGUS", "", " NCCL_BUFFSIZE "]
NCCL_BYTES = ["8388608", "4194304", "0x800000", "128", "129", "127", "0", "-1", "", "abc", "1e6", "nan",
              "inf", "2147483648", "2147483649", "99999999999999999999999", "0x", "4 MiB", "1.5",
              "0777", " 8388608 "]


@st.composite
def nccl_env_items(draw):
    items = []
    for _ in range(draw(st.integers(1, 3))):
        shape = draw(st.integers(0, 9))
        if shape == 0:
            items.append(draw(st.sampled_from(["", "NCCL_BUFFSIZE", "=8388608", "NCCL_BUFFSIZE==1"])))
        else:
            items.append(f"{draw(st.sampled_from(NCCL_NAMES))}={draw(st.sampled_from(NCCL_BYTES))}")
    return items


def test_fuzz_nccl_env_flags():
    @SETTINGS
    @given(items=nccl_env_items(), command=st.integers(0, 9),
           op=st.sampled_from(["all_reduce", "all_gather", "alltoall", "sendrecv", "broadcast"]))
    def case(items, command, op):
        _count("--nccl-env")
        env = [a for item in items for a in ("--nccl-env", item)]
        if command < 6:
            run_cli(["nccl-tests", "--topology", "dgx-h100:2x8", "--op", op, "-b", "8", "-e", "1G",
                     "-f", "8", "--json"] + env)
        elif command < 9:
            run_cli(["simulate", "--model", "tiny-lm", "--topology", "dgx-h100:2x8", "--iterations", "2",
                     "--json"] + env)
        else:       # a one-cell matrix: compare reads the flag the same way
            run_cli(["compare", "--model", "tiny-lm", "--topology", "dgx-h100:1x2", "--iterations", "2",
                     "--strategies", "allreduce", "--schedulers", "fifo", "--workers", "1"] + env)
    case()


# ------------------------------------------------------------ zoo defaults

TRAINER_DEFAULTS = {
    "global_batch": [256, 1024, 64, 1, 0, -8, 2 ** 63, 1.5, "256", None, True, float("nan")],
    "accumulate_sync": ["last", "every", "bogus", "", 1, None, ["last"]],
    "lengths": LENGTHS[:12] + [1, None, ["wikipedia"], {"a": 1}],
    "padding": PADDING[:14] + [{512: "bins:64:8", "other": "longest:8"}, {128: "longest:8"},
                               {0: "max"}, {-512: "max"}, {"abc": "max"}, {True: "max"},
                               {512: "bins:1024", "other": "max"}, {128: 8}, {}, {128: None},
                               {"other": "packed", "Other": "max"}, ["max"], 8, None],
    "jitter": ["maxtokens", "bucket:4", "shuffle", "none", "normal:0.1", "bogus", "", 3, None],
    "amp": ["autocast", "o2", "bogus", 1],
    "options": [{"bucket_bytes": 25.0e+6}, {"bucket_bytes": float("nan")}, {"bucket_bytes": -1},
                {"bucket_bytes": float("inf")}, {"bogus": 1}, {"first_bucket_bytes": 0}, {1: 2},
                {"bucket_bytes": [1]}, {"bucket_bytes": "abc"}, [], "x", None],
    "optimizer_options": [{"implementation": "fused"}, {"implementation": "bogus"},
                          {"clip_grad_norm": True}, {"clip_grad_norm": "yes"},
                          {"fp32_gradients": 1}, {"bogus": 1}, [], "fused", None],
    "framework": ["pytorch", "tensorflow", "jax", "", 1, None, ["tensorflow"]],
}


@st.composite
def zoo_defaults(draw, original):
    """The model file with 1-3 `defaults:` trainer keys set to drawn values, or deleted."""
    data = copy.deepcopy(original)
    for key in draw(st.lists(st.sampled_from(sorted(TRAINER_DEFAULTS)), min_size=1, max_size=3,
                             unique=True)):
        if draw(st.integers(0, 7)) == 0:
            data["defaults"].pop(key, None)
        else:
            data["defaults"][key] = draw(st.sampled_from(TRAINER_DEFAULTS[key]))
    return data


@pytest.mark.parametrize("model", ["bert-large", "tiny-lm"])
def test_fuzz_zoo_trainer_defaults(model, tmp_path_factory):
    """A zoo YAML copy with bad trainer defaults, simulated as --model FILE (bert-large has
    lengths and a per-seq padding table; tiny-lm gets them only from the fuzz)."""
    original = _load(f"embsim/workload/zoo/{model}.yaml")
    text = (ROOT / f"embsim/workload/zoo/{model}.yaml").read_text()

    @SETTINGS
    @given(data=st.one_of(zoo_defaults(original).map(_dump_yaml),
                          zoo_defaults(original).flatmap(lambda d: mutated(d)).map(_dump_yaml),
                          text_damage(text)),
           seq=st.sampled_from([None, "128", "512"]),
           flags=st.lists(st.sampled_from([("--padding", "max"), ("--lengths", "squad-1.1"),
                                           ("--jitter", "none"), ("--accumulate", "2"),
                                           ("--jitter", "shuffle")]), max_size=2, unique=True))
    def case(data, seq, flags):
        _count("zoo defaults")
        path = _write(tmp_path_factory, f"{model}.yaml", data)
        args = ["simulate", "--model", str(path), "--topology", "dgx-a100:1x2", "--iterations", "2", "--json"]
        if seq:
            args += ["--seq", seq]
        for flag, value in flags:
            args += [flag, value]
        run_cli(args)
    case()


# ------------------------------------------------------------ validation files

TRAINING_FILE = {
    "note": "fuzz",
    "embsim_defaults": {"model": "bert-base", "padding": "longest:8", "lengths": "wikipedia",
                        "amp": "autocast", "dtype": "fp16", "options": {"bucket_bytes": 25.0e+6}},
    "runs": [
        {"id": "one", "gpus": 1, "value": 100.0, "unit": "samples/s",
         "embsim": {"topology": "dgx-a100:1x1", "batch": 8, "seq": 128}},
        {"id": "two", "gpus": 2, "value": 190.0, "unit": "samples/s", "scaling_base": "one",
         "embsim": {"topology": "dgx-a100:1x2", "batch": 8, "seq": 128, "accumulate": 2,
                    "accumulate_sync": "every"}},
    ],
}
EMBSIM_VALUES = {
    "padding": PADDING[:16] + [8, None, ["max"]],
    "lengths": LENGTHS[:16] + [8, None],
    "jitter": ["bucket:4", "maxtokens", "shuffle", "bogus", "", 1],
    "accumulate": [1, 2, 0, -1, 1025, 2 ** 63, 1.5, "2", None],
    "accumulate_sync": ["last", "every", "bogus", "", 2],
    "seq": [128, 512, 64, 0, -1, 10 ** 7, "128", 1.5],
    "batch": [1, 8, 0, -1, 2 ** 40],
    "options": [{"bucket_bytes": "nan"}, {"bucket_bytes": -1}, {"bogus": 1}, {"bucket_bytes": 1e300},
                {"first_bucket_bytes": 0}, [], "x"],
    "amp": ["o2", "autocast", "bogus"],
    "scale": [2, 0, -1, float("nan"), float("inf"), "x"],
    "metric": ["tokens_per_s", "bogus"],
    "strategy": ["allreduce", "embrace", "distopt", "fsdp", "bogus"],
    # bert-base: 12 heads and blocks; TP on one GPU, CP on unfused attention: one-line refusals
    "tensor_parallel": [1, 2, 3, 0, -1, 1.5, "2", True],
    "sequence_parallel": [True, False, 1, "yes"],
    "pipeline_parallel": [1, 2, 5, 0],
    "context_parallel": [1, 2, 3, 0],
    "framework": ["tensorflow", "pytorch", "jax", 1, None],
}


@st.composite
def training_file(draw):
    data = copy.deepcopy(TRAINING_FILE)
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(sorted(EMBSIM_VALUES)))
        where = draw(st.sampled_from([data["embsim_defaults"], data["runs"][0]["embsim"],
                                      data["runs"][1]["embsim"]]))
        where[key] = draw(st.sampled_from(EMBSIM_VALUES[key]))
    return data


def test_fuzz_training_validation_file(tmp_path_factory):
    @SETTINGS
    @given(data=st.one_of(training_file().map(_dump_yaml),
                          training_file().flatmap(lambda d: mutated(d)).map(_dump_yaml)))
    def case(data):
        _count("validation file embsim:")
        path = _write(tmp_path_factory, "training.yaml", data)
        run_cli(["validate", "--training", str(path), "--iterations", "2", "--json"], allowed=(0, 1, 2))
    case()


def _env_text(draw) -> str:
    name = draw(st.sampled_from(NCCL_NAMES[:6] + ["NCCL_ALGO", "NCCL_PROTO"]))
    value = draw(st.sampled_from(NCCL_BYTES + ["Ring", "Simple", "^NVLS"]))
    return draw(st.sampled_from([f"{name}={value}", f"-x {name}={value}", f"{name}= {value}",
                                 f"{name}={value},{name}={value}"]))


@st.composite
def curve_file(draw, original):
    data = copy.deepcopy(original)
    choice = draw(st.integers(0, 5))
    if choice == 0:
        data["how"] = draw(st.sampled_from(NASTY))
    else:
        extra = " ".join(_env_text(draw) for _ in range(draw(st.integers(1, 3))))
        data["how"] = f"{data.get('how', '')} {extra}"
    return data


def test_fuzz_validation_file_how(tmp_path_factory):
    """A collective validation file whose `how` sets NCCL env variables (or is not text)."""
    original = _load("embsim/validation_data/nebius-h100-2node-allreduce.yaml")

    @SETTINGS
    @given(data=curve_file(original).map(_dump_yaml))
    def case(data):
        _count("validation file how")
        path = _write(tmp_path_factory, "curve.yaml", data)
        run_cli(["validate", "--nccl-tests", str(path), "--json"], allowed=(0, 1, 2))
    case()


@st.composite
def log_with_env(draw, text):
    lines = text.splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 3))):
        name = draw(st.sampled_from(NCCL_NAMES[:6] + ["NCCL_ALGO"]))
        value = draw(st.sampled_from(NCCL_BYTES))
        line = draw(st.sampled_from([f"node-a:4000:4000 [0] NCCL INFO {name} set by environment to {value}\n",
                                     f"# command: {name}={value} ./all_reduce_perf -b 1K -e 128M -f 4\n"]))
        lines.insert(draw(st.integers(0, len(lines))), line)
    return "".join(lines)


def test_fuzz_nccl_tests_log_env_lines(tmp_path_factory):
    text = (ROOT / "tests/imports/fixtures/h100-2x8-all_reduce.log").read_text()

    @SETTINGS
    @given(data=log_with_env(text))
    def case(data):
        _count("log NCCL env lines")
        path = _write(tmp_path_factory, "all_reduce.log", data)
        run_cli(["import-nccl-tests", str(path), "--out", str(path.with_name("t.yaml"))])
        run_cli(["validate", "--nccl-tests", str(path), "--topology", "dgx-h100:2x8", "--json"],
                allowed=(0, 1, 2))
    case()


# ------------------------------------------------------------ GPU compute keys

GPU_KEYS = ["l2_gbps", "gemm_fraction", "hbm_fraction", "sms", "clock_mhz", "l2_bytes_per_clk",
            "tensor_tflops"]


@st.composite
def gpu_keys(draw, original):
    data = copy.deepcopy(original)
    for key in draw(st.lists(st.sampled_from(GPU_KEYS), min_size=1, max_size=3, unique=True)):
        if draw(st.integers(0, 5)) == 0:
            data["gpu"].pop(key, None)
        elif key == "tensor_tflops":
            data["gpu"][key] = draw(st.sampled_from([{"bf16": 0}, {"fp8": float("nan")}, {"tf32": -1},
                                                     {"fp4": 10}, [], {}, {"bf16": 1e300}, "x"]))
        else:
            data["gpu"][key] = draw(st.sampled_from(NASTY + [1.0, 0.999, 1.0001, 2, 5500.0, 1e6, 1e7]))
    return data


@pytest.mark.parametrize("preset", ["dgx-h100.yaml", "l40s-roce.yaml"])
def test_fuzz_gpu_compute_keys(preset, tmp_path_factory):
    original = _load(f"topologies/{preset}")

    @SETTINGS
    @given(data=gpu_keys(original).map(_dump_yaml), model=st.sampled_from(["bert-base", "tiny-lm"]),
           dtype=st.sampled_from(["fp32", "tf32", "bf16", "fp8"]))
    def case(data, model, dtype):
        _count("gpu compute keys")
        path = _write(tmp_path_factory, "node.yaml", data)
        rc, _ = run_cli(["topology", "show", str(path)])
        if rc == 0:
            run_cli(["simulate", "--topology", f"{path}:1x2", "--model", model, "--dtype", dtype,
                     "--iterations", "2", "--json"])
    case()


def test_fuzz_trainer_ran_cases():
    """Printed for the record (pytest -s): how many cases each property ran."""
    print("fuzz (trainer inputs): " + ", ".join(f"{k} {v}" for k, v in CASES.items() if k != "ran")
          + f"; {CASES['ran']} CLI runs in all")

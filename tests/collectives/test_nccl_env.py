"""NCCL_BUFFSIZE & co: parsed, refused when wrong, and they reach the kernel's pipeline."""

import json
import re

import pytest
from embsim.cli import main
from embsim.collectives import CollectiveModel, pipeline
from embsim.collectives.constants import DEFAULT_BUFF_BYTES, constants_for
from embsim.collectives.nccl_env import NcclEnv, apply_env, env_from_text, parse_env
from embsim.errors import InputError
from embsim.topology import load_topology


def test_parse_and_refuse():
    env = parse_env({"nccl_buffsize": "0x800000", "NCCL_P2P_NET_CHUNKSIZE": 524288})
    assert env.get("NCCL_BUFFSIZE") == 8 << 20 and env.get("NCCL_P2P_NET_CHUNKSIZE") == 512 << 10
    for bad in ({"NCCL_BUFSIZE": 1}, {"NCCL_BUFFSIZE": "8M"}, {"NCCL_BUFFSIZE": 0}):
        with pytest.raises(InputError):
            parse_env(bad)


def test_env_from_text_reads_command_lines_and_nccl_info():
    how = "srun ... NCCL_BUFFSIZE=8388608 NCCL_P2P_NET_CHUNKSIZE=524288 NCCL_ALGO=Ring over EFA"
    assert env_from_text(how) == parse_env({"NCCL_BUFFSIZE": 8388608, "NCCL_P2P_NET_CHUNKSIZE": 524288})
    info = "node1:12:12 [0] NCCL INFO NCCL_BUFFSIZE set by environment to 2097152."
    assert env_from_text(info).get("NCCL_BUFFSIZE") == 2 << 20
    assert not env_from_text("NCCL_DEBUG=INFO NCCL_IB_HCA=mlx5")


def test_apply_env_sets_steps_and_caps_p2p_chunk():
    base = constants_for("2.26")
    assert apply_env(base, NcclEnv()) is base
    c = apply_env(base, parse_env({"NCCL_BUFFSIZE": 1 << 21}))
    assert c.buff_bytes["Simple"] == 1 << 21 and c.buff_bytes["LL"] == DEFAULT_BUFF_BYTES["LL"]
    # init.cc: the p2p chunk is never more than a Simple step (2 MiB / 8 = 256 KiB)
    assert c.p2p_chunk["nvl"] == 256 << 10 and c.p2p_chunk["net"] == 128 << 10
    assert pipeline.step_bytes("Simple", c.buff_bytes) == 256 << 10
    assert c.env == "NCCL_BUFFSIZE=2097152" and c.version == "2.26"


def test_buffsize_changes_ring_chunks_and_tree_steps():
    topo = load_topology("dgx-h100:2x8")
    ranks = range(16)
    plain = CollectiveModel(topo, algo="Ring", proto="Simple")
    big = CollectiveModel(topo, algo="Ring", proto="Simple", nccl_env=parse_env({"NCCL_BUFFSIZE": 8 << 20}))
    a, b = plain.plan("all_reduce", 1 << 30, ranks), big.plan("all_reduce", 1 << 30, ranks)
    assert a.time != b.time
    # the choice is NCCL's tuning model, which no buffer size enters
    assert (a.algo, a.proto, a.model_time) == (b.algo, b.proto, b.model_time)
    tree = CollectiveModel(topo, algo="Tree", proto="Simple")
    tree8 = CollectiveModel(topo, algo="Tree", proto="Simple", nccl_env=parse_env({"NCCL_BUFFSIZE": 8 << 20}))
    assert tree.plan("all_reduce", 1 << 30, ranks).time != tree8.plan("all_reduce", 1 << 30, ranks).time


def test_tree_simple_chunk_halving_is_pre_2_20():
    """2.19's computeColl halves a Tree/Simple chunk for small messages; 2.20 does not."""
    old, new = constants_for("2.19"), constants_for("2.20")
    assert old.tree_simple_chunk_halving and not new.tree_simple_chunk_halving
    small = 4 << 20
    assert pipeline.tree_chunk(small, 16, 8, "Simple", 2, 8, old.buff_bytes, True) < 512 << 10
    assert pipeline.tree_chunk(small, 16, 8, "Simple", 2, 8, new.buff_bytes, False) == 512 << 10


def test_cli_nccl_env(capsys):
    assert main(["nccl-tests", "--topology", "dgx-h100:2x8", "-b", "1M", "-e", "1M",
                 "--nccl-env", "NCCL_BUFFSIZE=8388608"]) == 0
    assert "NCCL_BUFFSIZE=8388608" in capsys.readouterr().out
    assert main(["nccl-tests", "--nccl-env", "NCCL_BUFFSIZE=lots"]) == 2
    assert "NCCL_BUFFSIZE" in capsys.readouterr().err


def test_simulate_takes_nccl_env(capsys):
    assert main(["simulate", "--topology", "dgx-h100:2x8", "--iterations", "2",
                 "--nccl-env", "NCCL_BUFFSIZE=8388608"]) == 0
    assert "NCCL_BUFFSIZE=8388608" in capsys.readouterr().out
    assert main(["simulate", "--nccl-env", "NCCL_LL_BUFFSIZE=-1"]) == 2


def test_simulate_takes_nccl_version(capsys):
    """--nccl-version picks the release the collectives follow, and the output says which;
    a release outside 2.18-2.30 is one line naming the flag, exit 2."""
    args = ["simulate", "--topology", "dgx-h100:2x8", "--model", "bert-large", "--iterations", "2", "--json"]
    steps = {}
    for version in ("2.18", "2.30"):
        assert main(args + ["--nccl-version", version]) == 0
        out = json.loads(capsys.readouterr().out)
        assert f"collectives: NCCL {version} model" in out["compute_source"]
        steps[version] = out["step_time_ms"]
    assert steps["2.18"] != steps["2.30"]          # 2.18's tables choose and time otherwise
    assert main(args) == 0
    assert "collectives: NCCL 2.30 model" in json.loads(capsys.readouterr().out)["compute_source"]
    assert main(["simulate", "--nccl-version", "2.17.1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("embsim: error: --nccl-version '2.17.1': releases 2.18 to 2.30 are modelled "
                   "(a patch level like 2.27.7, NCCL's own 2.27.7+cuda12.9 and the tag "
                   "v2.27.7-1 are accepted)")


def test_log_env_lines_reach_the_model():
    from embsim.imports import parse_nccl_tests_log
    from embsim.validate.collectives import run_errors

    body = _h100_2x8_log([(1 << 32, 24000.0), (1 << 33, 48000.0)], bus_factor=15 / 16,
                         elem_bytes=64, redop="none")
    info = "a:1:1 [0] NCCL INFO NCCL_BUFFSIZE set by environment to 8388608."
    run = parse_nccl_tests_log("\n".join([info] + body), "log.txt", op="all_gather")[0]
    plain = parse_nccl_tests_log("\n".join(body), "log.txt", op="all_gather")[0]
    assert run.env_lines and not plain.env_lines
    with_env, without = run_errors(run, "dgx-h100:2x8"), run_errors(plain, "dgx-h100:2x8")
    assert {p.proto for p in with_env.points} == {"Simple"}
    assert [p.simulated_busbw for p in with_env.points] != [p.simulated_busbw for p in without.points]


def test_a_name_given_twice_with_two_values_is_refused():
    assert parse_env([("NCCL_BUFFSIZE", "8388608"), ("nccl_buffsize", "0x800000")]).get("NCCL_BUFFSIZE") == 8 << 20
    with pytest.raises(InputError, match=r"^--nccl-env NCCL_BUFFSIZE: given twice, 128 and 256 bytes$"):
        parse_env([("NCCL_BUFFSIZE", "128"), ("NCCL_BUFFSIZE", "256")])
    with pytest.raises(InputError, match=r"^--nccl-env '': not a modelled NCCL variable"):
        parse_env([("", "8")])


def test_env_errors_name_where_the_text_came_from():
    with pytest.raises(InputError, match=r"^run.log: NCCL_BUFFSIZE=0: outside"):
        env_from_text("NCCL_BUFFSIZE set by environment to 0", "run.log:")


def test_validation_file_how_must_be_text_and_its_env_names_the_file(tmp_path, capsys):
    from embsim.collectives.validation import DATA_DIR
    text = (DATA_DIR / "nebius-h100-2node-allreduce.yaml").read_text()
    path = tmp_path / "curve.yaml"
    for how, message in ((".nan", r"curve.yaml: how \(line \d+\): must be a string, got float nan"),
                         ("NCCL_BUFFSIZE=0 mpirun", r"curve.yaml: how: NCCL_BUFFSIZE=0: outside 128\.\.")):
        path.write_text(re.sub(r"(?m)^how: .*$", f"how: {how}", text))
        assert main(["validate", "--nccl-tests", str(path)]) == 2      # a float how was a TypeError
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and re.search(message, err), err


def test_log_env_error_names_the_log(tmp_path, capsys):
    from pathlib import Path
    fixture = Path(__file__).resolve().parent.parent / "imports/fixtures/h100-2x8-all_reduce.log"
    path = tmp_path / "ar.log"
    path.write_text("a:1:1 [0] NCCL INFO NCCL_BUFFSIZE set by environment to 7\n" + fixture.read_text())
    assert main(["validate", "--nccl-tests", str(path), "--topology", "dgx-h100:2x8"]) == 2
    err = capsys.readouterr().err.strip()
    assert re.fullmatch(r"embsim: error: .*ar\.log \(run at line \d+\): NCCL_BUFFSIZE=7: outside 128\.\..*", err), err


def test_values_read_as_nccls_strtoll_reads_them():
    """NCCL parses the value with strtoll(s, NULL, 0): 0x hex and 0-led octal; a form it would
    read differently (1_000_000 -> 1) or not whole (1e6, 08) is refused, not guessed."""
    assert parse_env({"NCCL_BUFFSIZE": "040000000"}).get("NCCL_BUFFSIZE") == 8 << 20
    assert parse_env({"NCCL_BUFFSIZE": "0X800000"}).get("NCCL_BUFFSIZE") == 8 << 20
    for bad in ("1_000_000", "08", "1e6", "+4096", "0x"):
        with pytest.raises(InputError, match="not a whole number of bytes"):
            parse_env({"NCCL_BUFFSIZE": bad})


def test_nvls_disabled_in_the_measurements_env_rules_out_nvls_and_nvlstree():
    """transport/nvls.cc ncclNvlsInit: NCCL_NVLS_ENABLE=0 leaves nvlsSupport 0, so a run's
    recipe that sets it can run neither NVLS nor NVLSTree (whatever NCCL_ALGO says)."""
    from embsim.collectives.nccl_model import parse_filter
    from embsim.collectives.validation import _algo
    assert _algo("all_reduce_perf -g 1") is None
    assert _algo("NCCL_NVLS_ENABLE=1 NCCL_ALGO=Ring") == "Ring"
    assert parse_filter(_algo("NCCL_NVLS_ENABLE=0"), "algo") == parse_filter("^NVLS,NVLSTree", "algo")
    assert parse_filter(_algo("NCCL_ALGO=^Tree NCCL_NVLS_ENABLE=0"), "algo") == parse_filter(
        "^Tree,NVLS,NVLSTree", "algo")
    assert parse_filter(_algo("NCCL_ALGO=Ring,NVLSTree NCCL_NVLS_ENABLE=0"), "algo") == {"Ring"}
    model = CollectiveModel(load_topology("gb200-nvl72:2x64"), algo=_algo("NCCL_NVLS_ENABLE=0"))
    picks = {model.plan("all_reduce", 1 << s, range(128)).algo for s in range(10, 36, 2)}
    assert picks and not picks & {"NVLS", "NVLSTree"}


def test_a_logs_algo_proto_and_nvls_settings_reach_the_simulation():
    """A raw nccl-tests log's own `NCCL_ALGO / NCCL_PROTO / NCCL_NVLS_ENABLE set by environment
    to ...` INFO lines restrict what the simulated NCCL may pick, as they did the real one."""
    from embsim.collectives.validation import run_filters
    from embsim.imports import parse_nccl_tests_log
    from embsim.validate.collectives import run_errors
    assert run_filters("x NCCL INFO NCCL_ALGO set by environment to Ring.") == ("Ring", None)
    assert run_filters("NCCL INFO NCCL_PROTO set by environment to Simple\nNCCL INFO "
                       "NCCL_NVLS_ENABLE set by environment to 0") == ("^NVLS,NVLSTree", "Simple")

    body = _h100_2x8_log([(1 << 20, 60.0), (1 << 32, 24000.0)], bus_factor=2 * 15 / 16,
                         elem_bytes=4, redop="sum")
    info = ["a:1:1 [0] NCCL INFO NCCL_ALGO set by environment to Ring",
            "a:1:1 [0] NCCL INFO NCCL_PROTO set by environment to Simple"]
    run = parse_nccl_tests_log("\n".join(info + body), "log.txt", op="all_reduce")[0]
    plain = parse_nccl_tests_log("\n".join(body), "log.txt", op="all_reduce")[0]
    assert {(p.algo, p.proto) for p in run_errors(run, "dgx-h100:2x8").points} == {("Ring", "Simple")}
    assert {(p.algo, p.proto) for p in run_errors(plain, "dgx-h100:2x8").points} != {("Ring", "Simple")}


def _h100_2x8_log(points, bus_factor: float, elem_bytes: int, redop: str) -> list[str]:
    """The lines of a synthetic nccl-tests log of 2 nodes x 8 H100: header, rank lines and
    one row per (size, time in us), out-of-place and in-place alike."""
    def row(size, t_us):
        algbw = size / t_us / 1e3
        bus = algbw * bus_factor
        return (f"{size:>12} {size // elem_bytes:>12} float {redop} -1 {t_us:8.1f} {algbw:7.2f} {bus:7.2f} 0 "
                f"{t_us:8.1f} {algbw:7.2f} {bus:7.2f} 0")
    sizes = [size for size, _ in points]
    head = [f"# nThread 1 nGpus 1 minBytes {min(sizes)} maxBytes {max(sizes)} step: 2(factor) warmup iters: 5 "
            "iters: 20 agg iters: 1 validation: 1 graph: 0", "#"]
    head += [f"#  Rank {r:2d} Group  0 Pid {r} on {'a' if r < 8 else 'b'} device {r % 8} [0x00] NVIDIA H100 80GB HBM3"
             for r in range(16)]
    return head + [
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)",
        *(row(size, t) for size, t in points),
        "# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 1.0 ", "#"]


def test_a_value_past_pythons_int_digit_limit_is_one_line():
    # int() refuses more than 4300 decimal digits with a bare ValueError (was a traceback)
    with pytest.raises(InputError, match="NCCL_BUFFSIZE: 5,000 digits, outside"):
        parse_env({"NCCL_BUFFSIZE": "1" * 5000})

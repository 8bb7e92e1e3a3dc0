"""A trace that embeds the machine it measured: one file, usable as a topology, and the
default machine of `simulate --trace`."""

import json
from pathlib import Path

import pytest
import yaml

from embsim.cli import main
from embsim.errors import InputError
from embsim.topology import load_topology
from embsim.trace import load_trace, parse_trace

ROOT = Path(__file__).resolve().parents[2]


def _with_host(tmp_path, host: dict, name: str = "calibrated-box-cpu-20260101T000000Z") -> Path:
    doc = yaml.safe_load((ROOT / "traces" / "cpu-gloo-tiny-lm.yaml").read_text())
    doc.pop("end_of_trace")
    doc["topology"] = name
    doc["host_topology"] = dict(host, name=name)
    doc["end_of_trace"] = True
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _host():
    return yaml.safe_load((ROOT / "topologies" / "local-cpu.yaml").read_text())


def test_embedded_machine_is_the_default_and_a_topology_file(tmp_path, capsys):
    path = _with_host(tmp_path, _host())
    trace = load_trace(path)
    assert trace.host_topology["name"] == trace.topology
    topo = load_topology(f"{path}:1x2")
    assert topo.preset == trace.topology and topo.node.fabric.kind == "host"
    assert main(["simulate", "--trace", str(path), "--iterations", "2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["topology"]["preset"] == trace.topology
    # the trace's own curves apply: it is simulated on the machine it measured
    assert "collectives: measured" in out["compute_source"]


def test_a_bad_embedded_machine_is_refused_with_its_key(tmp_path):
    host = _host()
    host["fabric"]["host_gbps"] = float("nan")
    path = _with_host(tmp_path, host)
    with pytest.raises(InputError, match=r"host_topology: fabric\.host_gbps .*finite"):
        load_trace(path)


def test_a_trace_without_one_is_not_a_topology(tmp_path):
    with pytest.raises(InputError, match=r"without an embedded topology .*names \(local-cpu\.yaml\) instead"):
        load_topology(str(ROOT / "traces" / "cpu-gloo-tiny-lm.yaml"))


def test_round_trip_keeps_it(tmp_path):
    from embsim.trace import write_trace
    path = _with_host(tmp_path, _host())
    again = write_trace(tmp_path / "again.yaml", load_trace(path))
    assert parse_trace(again.read_text(), "again").host_topology == load_trace(path).host_topology

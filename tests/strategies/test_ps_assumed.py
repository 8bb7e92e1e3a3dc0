"""What a ps result rests on that nobody measured is said where it is used (strategies.ps
ParameterServerStrategy._assumed): the servers' summation rate, ServerSpec's assumed 20 GB/s
unless the topology or --option gives one, and a socket link the topology file marks
[UNKNOWN] (the Grace racks) where the servers' traffic crosses it.

probe U, M4: ps on dgx-h100:1x8 was "bandwidth-bound (hottest link ps-cpu busy 62 %)" at the
assumed rate, and on gb300-nvl72 one server behind the rack's 6 GB/s [UNKNOWN] socket link took
4.32 s a step; no output said either figure was assumed."""

from __future__ import annotations

import io
from dataclasses import replace

from rich.console import Console

from embsim.compare import CompareResult, run_one
from embsim.engine.run import SimulationConfig, simulate
from embsim.report.compare_why import why_best
from embsim.topology import load_topology, parse_node_type

SUMMED = "an assumed rate, not a measured one"
SOCKET = "marks [UNKNOWN]"


def cfg(topology="dgx-h100:1x8", model="dlrm-criteo-t3", strategy="ps", **kw):
    return SimulationConfig(topology=topology, model=model, strategy=strategy, iterations=2,
                            efficiency_baseline=False, **kw)


def said(r, words):
    return [n for n in r.notes if words in n]


def test_the_assumed_summation_rate_is_said_with_how_to_set_it():
    r = simulate(cfg())
    note, = said(r, SUMMED)
    assert note.startswith("ps: each server sums and applies what is pushed to it at 20 GB/s (the ps-cpu link")
    assert "parameter_servers.sum_gbps" in note and "--option server_sum_gbps=GBPS" in note
    assert r.link_caveats == {"ps-cpu": "the servers' summation rate, an assumed 20 GB/s a server "
                                        "(--option server_sum_gbps)"}
    # dgx-h100's socket link is a published figure: nothing said about it
    assert not said(r, SOCKET)


def test_a_given_rate_is_no_assumption(tmp_path):
    given = simulate(cfg(strategy_options={"server_sum_gbps": 40}))
    assert not said(given, SUMMED) and "ps-cpu" not in given.link_caveats
    text = open(load_topology("dgx-h100:1x8").node.source).read() + "parameter_servers: {sum_gbps: 30}\n"
    path = tmp_path / "h100-servers.yaml"
    path.write_text(text)
    assert parse_node_type(text).servers.sum_gbps_given
    from_file = simulate(cfg(topology=f"{path}:1x8"))
    assert not said(from_file, SUMMED)
    # other strategies sum on no server
    assert not said(simulate(cfg(strategy="embrace")), SUMMED)


def test_one_gpu_keeps_its_server_and_the_note():
    r = simulate(cfg(topology="dgx-h100:1x1", batch=1024))
    assert said(r, SUMMED)


def test_an_unknown_socket_link_on_the_servers_route_is_named():
    assert "fabric.cpu_link_gbps" in load_topology("gb300-nvl72:1x72").node.unknown
    r = simulate(cfg(topology="gb300-nvl72:1x72"))
    note, = said(r, SOCKET)
    assert note == ("ps: the node's 72 GPUs share one colocated server at its first CPU socket; those "
                    "under its other socket reach it, and local aggregation's host copies, over the "
                    "socket link: 6 GB/s per direction, a figure the topology file (gb300-nvl72) marks "
                    "[UNKNOWN]")
    assert r.link_caveats["cpu"] == "the socket link, 6 GB/s, a figure the topology file marks [UNKNOWN]"
    assert r.busiest_link[0] == "cpu"          # what the step waits on there


def test_compare_says_the_bandwidth_bound_server_link_is_assumed():
    config = cfg(scheduler="fifo")
    rows = tuple(replace(run_one(c), speedup=1.0) for c in (config, cfg(strategy="embrace")))
    text = why_best(rows)
    assert ("ps/fifo's hottest link ps-cpu busy" in text
            and "; ps-cpu is the servers' summation rate, an assumed 20 GB/s a server "
                "(--option server_sum_gbps))" in text)
    from embsim.report.compare_table import print_matrix
    buf = io.StringIO()
    print_matrix(CompareResult(config=config, rows=rows, n_gpus=8), Console(file=buf, width=250))
    assert SUMMED in buf.getvalue()

"""`embsim compare`: rows that ran one plan are shown as one (probe F6), and what a matrix
was run on and with is in its text and JSON (probe F8: options; probe H F3: model,
topology, GPUs, workload, seed, version)."""

from __future__ import annotations

import json

from click.testing import CliRunner
from rich.console import Console

from embsim.commands.compare import command
from embsim.compare import compare, unresolved_with_best
from embsim.engine.run import SimulationConfig
from embsim.report.compare_table import print_matrix

# transformer-wmt's only table is tied to a full softmax: every strategy AllReduces it densely
DENSE_ONLY = SimulationConfig(topology="1x2", model="transformer-wmt", batch=2, seq=16, iterations=2)


def test_rows_of_one_plan_are_shown_as_that_plan_not_ranked_apart():
    res = compare(DENSE_ONLY, ["allreduce", "allgather", "embrace"], ["fifo", "priority", "embrace-2d"],
                  workers=1)
    same = {r.label: r.same_plan_as for r in res.rows if r.refused is None}
    assert same == {"allreduce/priority": None, "allgather/priority": "allreduce/priority",
                    "embrace/priority": "allreduce/priority",
                    "allreduce/fifo": None, "allgather/fifo": "allreduce/fifo",
                    "embrace/fifo": "allreduce/fifo"}
    assert unresolved_with_best(res.rows) == []          # a copy of the best is no rival to it
    # embrace-2d refuses allreduce's plan under every name, as it refuses allreduce itself
    assert {r.label for r in res.rows if r.refused} == {
        "allreduce/embrace-2d", "allgather/embrace-2d", "embrace/embrace-2d"}
    console = Console(width=400, record=True)
    print_matrix(res, console=console)
    text = console.export_text()
    assert "=1 │ allgather/priority (same plan as allreduce/priority)" in text
    assert "=2 │ embrace/fifo (same plan as allreduce/fifo)" in text


def test_strategies_with_sparse_tables_are_different_plans():
    cfg = SimulationConfig(topology="1x2", model="lstm-lm1b", batch=4, iterations=2)
    res = compare(cfg, ["allreduce", "allgather"], ["fifo"], workers=1)
    assert all(r.same_plan_as is None and r.plan for r in res.rows)
    assert len({r.plan for r in res.rows}) == 2


def test_json_and_text_say_what_was_compared_and_with_which_options():
    args = ["--topology", "1x2", "--model", "lstm-lm1b", "--batch", "4", "--iterations", "2",
            "--strategies", "allreduce,embrace", "--schedulers", "fifo,priority",
            "--option", "partition_bytes=16e6", "--seed", "3"]
    out = CliRunner().invoke(command, args + ["--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["embsim_version"] and doc["model"] == "lstm-lm1b" and doc["gpus"] == 2
    assert {"preset": "dgx-h100", "nodes": 1, "gpus_per_node": 2, "gpus": 2}.items() <= doc["topology"].items()
    assert doc["topology"]["file"].endswith("dgx-h100.yaml")
    assert doc["workload"]["batch"] == 4 and doc["workload"]["seq"] and doc["workload"]["dtype"]
    assert doc["workload"]["seed"] == 3
    rows = {f"{r['strategy']}/{r['scheduler']}": r for r in doc["rows"]}
    prio = rows["embrace/priority"]["options"]
    assert prio["scheduler"]["options"]["partition_bytes"] == {"value": 16e6, "from": "--option"}
    assert prio["scheduler"]["options"]["credit_bytes"]["from"] == "default"
    assert prio["strategy"] == {"name": "embrace", "options": prio["strategy"]["options"]}
    assert prio["strategy"]["options"]["shard"] == {"value": "cols", "from": "default"}
    assert rows["allreduce/fifo"]["options"]["strategy"] == {"name": "allreduce", "options": {}}
    link = rows["allreduce/fifo"]["busiest_link"]
    assert set(link) == {"kind", "mean_utilisation", "hottest_link_utilisation"}
    assert all(r["same_plan_as"] is None for r in doc["rows"])
    assert doc["same_plan"] == [] and "slower_than_fifo" in doc and "why" in doc
    text = CliRunner().invoke(command, args).output
    assert "options: priority: partition_bytes=16000000 (--option); credit_bytes=64000000 (default)" in text
    assert "options: allreduce: no options" in text
    assert "topology file: " in text and "dgx-h100.yaml" in text
    assert "workload: batch 4 x seq" in text

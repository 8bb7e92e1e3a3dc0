"""The order a model file lists its tables in is not an order of execution: reversing
dlrm-criteo-t3's `tables:` moved an embrace shard=rows step by 2.6 % (a metamorphic probe,
2026-12-05), since the per-table AlltoAlls were issued in list order, not layer order."""

import json

import yaml

from embsim.cli import main
from embsim.workload import ZOO_DIR


def _step(capsys, model, *options):
    assert main(["simulate", "--topology", "dgx-a100:1x8", "--model", model, "--strategy", "embrace",
                 "--iterations", "2", "--json", *options]) == 0
    return json.loads(capsys.readouterr().out)["step_time_ms"]


def test_reversing_the_tables_list_changes_no_step(tmp_path, capsys):
    doc = yaml.safe_load((ZOO_DIR / "dlrm-criteo-t3.yaml").read_text(encoding="utf-8"))
    doc["tables"] = list(reversed(doc["tables"]))
    reversed_file = tmp_path / "dlrm-reversed.yaml"
    reversed_file.write_text(yaml.safe_dump(doc, sort_keys=False))
    for options in (["-o", "shard=rows"], ["-o", "shard=hashed"]):
        assert _step(capsys, "dlrm-criteo-t3", *options) == _step(capsys, str(reversed_file), *options)

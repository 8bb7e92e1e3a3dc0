"""`embsim compare --json`: the matrix (report.result_json.compare_json) with what it was run
on and with, so that two compare results can be told apart by more than their numbers:
the embsim version, the model, the topology (and its file), the GPU count, the workload
(batch, seq, dtype, seed...), each row's strategy and scheduler options with where each
came from, which rows ran one plan, and the why/slower lines the terminal prints."""

from __future__ import annotations

from .. import __version__
from .compare_plans import fallback_notes
from .compare_why import losses_to_fifo, why_best
from .provenance import with_token_source
from .result_json import cluster_json, compare_json, link_json


def row_extras(result, row) -> dict:
    return {"same_plan_as": row.same_plan_as,
            "options": None if row.options is None else row.options.as_json(),
            "busiest_link": link_json(row.busiest_link)}


def compare_document(result) -> dict:
    base = result.ran_baseline
    cluster = None if base is None else base.cluster
    doc = {"embsim_version": __version__,
           "model": result.config.model,
           "topology": None if cluster is None else cluster_json(cluster),   # with its file
           "gpus": result.n_gpus,
           # simulate's workload block (report.provenance.workload_record) of the baseline's run
           "workload": {} if base is None else with_token_source(base.workload, result.config)}
    doc.update(compare_json(result))
    doc["rows"] = [{**out, **row_extras(result, row)} for out, row in zip(doc["rows"], result.rows)]
    # the lines the terminal prints under the table, so the JSON says as much
    doc.update({"why": why_best(result.rows), "slower_than_fifo": losses_to_fifo(result.rows),
                "same_plan": fallback_notes(result.rows)})
    return doc

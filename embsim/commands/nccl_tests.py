"""`embsim nccl-tests`: simulated nccl-tests sweep on a topology."""

from __future__ import annotations

import json

import click

from embsim.collectives import CollectiveModel
from embsim.collectives import nccl_tests as nt
from embsim.collectives.busbw import OPS, canonical_op
from embsim.collectives.nccl_env import NcclEnv
from embsim.commands.options import NCCL_ENV
from embsim.errors import InputError
from embsim.words import counted


@click.command("nccl-tests")
@click.option("--topology", "topology_spec", default="16x8", show_default=True,
              help="NxG | PRESET:NxG | PRESET | file.yaml")
@click.option("--op", default="all_reduce", show_default=True, help=f"one of {', '.join(OPS)}")
@click.option("-b", "--minbytes", default="8", show_default=True, help="smallest size (K/M/G suffixes)")
@click.option("-e", "--maxbytes", default="128M", show_default=True, help="largest size")
@click.option("-f", "--stepfactor", default="2", show_default=True, help="multiply the size by this")
@click.option("-d", "--datatype", default="float", show_default=True)
@click.option("-g", "--ngpus", default="1", show_default=True,
              help="GPUs driven by one process, as nccl-tests takes it; adds no launch cost "
                   "(published -g 4/-g 8 curves time ops below one launch per GPU)")
@click.option("--algo", default=None, help='NCCL_ALGO syntax, e.g. "Ring", "Tree,Ring", "^NVLS"')
@click.option("--proto", default=None, help='NCCL_PROTO syntax, e.g. "LL128", "^LL"')
@click.option("--nccl-version", default="2.30", show_default=True, help="NCCL release whose choices and kernels to model, 2.18 to 2.30 (e.g. 2.27.7)")
@NCCL_ENV
@click.option("--json", "as_json", is_flag=True, help="print JSON instead of the table")
def command(topology_spec, op, minbytes, maxbytes, stepfactor, datatype, ngpus, algo, proto,
            nccl_version, nccl_env, as_json):
    """Print the table nccl-tests would print, from the simulated collective times."""
    from embsim.topology import load_topology

    op = canonical_op(op)
    if op not in OPS:
        raise InputError(f"--op {op!r}: known ops are {', '.join(OPS)}")
    try:
        factor = float(stepfactor)
    except ValueError:
        raise InputError(f"--stepfactor {stepfactor!r}: not a number") from None
    try:
        gpus = int(ngpus)
    except ValueError:
        raise InputError(f"--ngpus {ngpus!r}: not an integer") from None
    if not 1 <= gpus <= 64:
        raise InputError(f"--ngpus {ngpus!r}: GPUs driven by one process must be 1..64")
    sizes = nt.sweep_sizes(minbytes, maxbytes, factor)   # errors name -b/-e as typed
    env = NcclEnv(nccl_env)     # the shared option's checked (NAME, bytes) pairs
    topo = load_topology(topology_spec)
    model = CollectiveModel(topo, algo=algo, proto=proto, nccl_version=nccl_version, nccl_env=env,
                            flags=("--algo", "--proto"))
    rows = nt.run(model, op, sizes, datatype, gpus_per_process=gpus)
    label = f"{topo.preset}:{topo.n_nodes}x{topo.gpus_per_node}"
    if as_json:
        click.echo(json.dumps({"topology": label, "topology_file": topo.node.source or None,
                               "op": op, "ranks": topo.n_gpus,
                               "nccl_version": model.release, "nccl_env": model.consts.env,
                               "view_note": model.view_note, "tuner_note": model.tuner_note,
                               "launch_note": nt.launch_note(gpus), "fidelity_note": model.fidelity_note,
                               "rows": nt.rows_json(rows)}, indent=1))
    else:
        header = (f"# embsim nccl-tests (simulated): {op} on {label}, {counted(topo.n_gpus, 'rank')}, "
                  f"NCCL {model.release} model, -g {gpus}"
                  + (f", {model.consts.env}" if model.consts.env else ""))
        # the preset name is the file's own name: a modified copy reads like the stock one
        header += f"\n# topology file: {topo.node.source}" if topo.node.source else ""
        for note in model.notes + (nt.launch_note(gpus),):
            header += f"\n# {note}" if note else ""
        click.echo(nt.format_table(rows, header))

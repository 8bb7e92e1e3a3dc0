"""What `embsim model show` says about a model: a plain dict (the --json form) built from
the validated zoo file and the model it builds at its defaults, and its text form.

Every number comes from the workload layer: parameters from the layer shapes
(embsim.workload.build), FLOPs from the per-layer cost rules (embsim.workload.costs) at the
file's default batch and sequence length, every sample at full length (no length
distribution, no padding policy: what `simulate --padding max` computes).
"""

from __future__ import annotations

from collections import Counter

import click

from ..workload import Model, ModelSpec
from ..workload.model import FRAMEWORK_DESCRIPTIONS
from .listing import first_sentence
from ..words import counted

# version of the --json layout; tests/commands/test_model_command.py checks the keys
SCHEMA = 1


def model_summary(spec: ModelSpec, model: Model) -> dict:
    """The summary of `model`, built from `spec` at the spec's defaults."""
    layers, i = [], 0
    for ls in spec.layers:                       # build_model appends each spec layer's repeats in order
        built = model.layers[i:i + ls.repeat]
        i += ls.repeat
        layers.append({"name": ls.name, "kind": ls.kind, "repeat": ls.repeat,
                       "params": sum(l.params for l in built),
                       "flops_per_sample": sum(l.fwd_flops + l.bwd_flops for l in built) / model.batch})
    assert i == len(model.layers), "built layers do not match the file's layers"
    fwd = sum(l.fwd_flops for l in model.layers) / model.batch
    bwd = sum(l.bwd_flops for l in model.layers) / model.batch
    kinds = Counter()
    for ls in spec.layers:
        kinds[ls.kind] += ls.repeat
    return {
        "schema": SCHEMA,
        "name": spec.name,
        "description": " ".join(spec.description.split()),
        "file": spec.path,
        "source": " ".join(spec.source.split()),
        "defaults": {
            "batch": spec.batch, "seq": spec.seq, "dtype": spec.dtype,
            "optimizer": spec.optimizer,
            "optimizer_implementation": spec.optimizer_implementation,
            "amp": spec.amp, "lengths": spec.lengths,
            "padding": {("other" if seq is None else str(seq)): p for seq, p in spec.padding} or None,
            "global_batch": spec.global_batch,
            "framework": spec.framework,
        },
        "parameters": {"total": model.params, "dense": model.dense_params,
                       "embedding": model.embedding_params,
                       "published": dict(spec.published)},
        "tables": [{"name": t.name, "vocab": t.vocab, "dim": t.dim, "params": t.params,
                    "input": t.input, "lookups_per_sample": t.lookups_per_sample,
                    "tied_to": t.tied_to, "weight_of": t.weight_of, "sampled": t.sampled}
                   for t in model.tables],
        "layers_by_kind": dict(kinds.most_common()),
        "layers": layers,
        "flops_per_sample": {"forward": fwd, "backward": bwd, "total": fwd + bwd,
                             "batch": model.batch, "seq": model.seq},
    }


def _si(n: float, unit: str = "") -> str:
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= scale:
            return f"{n / scale:.4g} {prefix}{unit}"
    return f"{n:.4g} {unit}".rstrip()


def print_model_summary(s: dict) -> None:
    """`embsim model show` without --json."""
    d, p, f = s["defaults"], s["parameters"], s["flops_per_sample"]
    echo = click.echo
    echo(f"{s['name']}  ({s['file']})")
    if s["description"]:
        echo(s["description"])
    echo(f"Source      {first_sentence(s['source'])}")
    trainer = [f"{k} {d[k]}" for k in ("amp", "lengths", "global_batch") if d[k] is not None]
    if d["framework"] != "pytorch":
        trainer.append(f"framework {d['framework']} ({FRAMEWORK_DESCRIPTIONS[d['framework']]})")
    if d["padding"]:
        trainer.append("padding " + ", ".join(f"{k}: {v}" for k, v in d["padding"].items()))
    echo(f"Defaults    batch {d['batch']} per GPU, seq {d['seq']}, {d['dtype']}, "
         f"optimizer {d['optimizer']} ({d['optimizer_implementation']})"
         + ("; " + "; ".join(trainer) if trainer else ""))
    published = ", ".join(f"{k} {_si(v)}: computed {p[_PUBLISHED_FIELD[k]] / v - 1:+.1%}"
                          for k, v in p["published"].items())
    echo(f"Parameters  {p['total']:,} ({_si(p['total'])}): dense {p['dense']:,}, "
         f"embedding {p['embedding']:,}" + (f"  [published {published}]" if published else ""))
    for t in s["tables"]:
        reads = ("true class", "true classes") if t["weight_of"] else ("lookup", None)
        extra = [f"input {t['input']}", f"{counted(t['lookups_per_sample'], *reads)}/sample"]
        if t["weight_of"]:
            extra.append(f"weight of {t['weight_of']}")
        if t["tied_to"]:
            extra.append(f"tied to {t['tied_to']}")
        if t["sampled"]:
            extra.append(f"{t['sampled']:,} sampled")
        echo(f"  table {t['name']}: {t['vocab']:,} x {t['dim']:,} = {t['params']:,}  ({', '.join(extra)})")
    echo("Layers      " + ", ".join(f"{n} {kind}" for kind, n in s["layers_by_kind"].items()))
    echo(f"FLOPs       {_si(f['total'], 'FLOP')} per sample (forward {_si(f['forward'], 'FLOP')}, "
         f"backward {_si(f['backward'], 'FLOP')}; at seq {f['seq']}, batch {f['batch']}, no padding)")
    width = max(len(layer["name"]) for layer in s["layers"])
    kind_width = max(len(layer["kind"]) for layer in s["layers"])
    echo(f"  {'layer':<{width}}  {'kind':<{kind_width}}  repeat  {'params':>15}  FLOP/sample")
    for layer in s["layers"]:
        echo(f"  {layer['name']:<{width}}  {layer['kind']:<{kind_width}}  {layer['repeat']:>6}  "
             f"{layer['params']:>15,}  {_si(layer['flops_per_sample'])}")


_PUBLISHED_FIELD = {"params": "total", "dense_params": "dense", "embedding_params": "embedding"}

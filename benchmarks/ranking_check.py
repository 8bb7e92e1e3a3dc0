"""Published strategy rankings against embsim: for every table in
embsim/validation_data/rankings/*.yaml (one testbed, one model, several synchronisation
systems measured side by side), simulate each system's embsim strategy on the table's
topology and model and print, per run, published vs simulated throughput relative to the
table's baseline system, and whether the ORDER agrees (pairs of systems that embsim
expresses by different strategies). Nothing is fitted or chosen on these tables: the
topology, model and strategy options are fixed in the data files with their sources.

    .venv/bin/python benchmarks/ranking_check.py [--json] [TABLE.yaml ...]

A table names one model (`embsim.model`) and runs on `machines` machines of the testbed, or
several (`embsim.models`: key -> model file, or null with `embsim.not_simulated[key]` saying
why) with each run naming its `model`; a run on one machine may give its `gpus` instead of
`machines` (1, 2, 4 or 8 GPUs of one server). Scaling is per model, over its smallest run.

Headline: mean and max of |simulated ratio / published ratio - 1| over the non-baseline
systems, and the pairwise order agreement count.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from embsim.engine.config import SimulationConfig
from embsim.engine.run import simulate
from embsim.errors import InputError
from embsim.strategies.base import STRATEGIES

ROOT = Path(__file__).resolve().parent.parent
RANKINGS = ROOT / "embsim" / "validation_data" / "rankings"
ITERATIONS = 4            # embsim's default: the first is warm-up
SOURCE_KEYS = ("what", "url")
TOP_KEYS = ("name", "source", "testbed", "model", "unit", "embsim", "systems", "runs")


@dataclass(frozen=True)
class System:
    name: str
    strategy: str | None          # None: not expressible in embsim (`why` says why)
    options: dict
    why: str


@dataclass(frozen=True)
class Run:
    machines: int
    gpus_per_machine: int
    model: str                  # a key of RankingTable.models
    measured: dict              # {system: published throughput}

    @property
    def gpus(self) -> int:
        return self.machines * self.gpus_per_machine


@dataclass(frozen=True)
class RankingTable:
    path: Path
    name: str
    source: dict
    topology: str
    models: dict                # key -> model file, or None: not simulated (not_simulated[key] says why)
    gpus_per_machine: int
    baseline: str
    systems: tuple[System, ...]
    runs: tuple[Run, ...]
    not_simulated: dict = None

    @property
    def model(self) -> str:
        """The model file of a one-model table (the first simulated one otherwise)."""
        return next(m for m in self.models.values() if m)

    def expressible(self) -> list[System]:
        return [s for s in self.systems if s.strategy]

    def simulated_runs(self) -> list[Run]:
        return [r for r in self.runs if self.models[r.model]]


def _need(cond: bool, path: Path, key: str, what: str) -> None:
    if not cond:
        raise InputError(f"{path.name}: {key}: {what}")


def load_table(path: Path) -> RankingTable:
    """One rankings file, checked: every key present, every system either an embsim strategy
    or a reason it is not, every run a number for every system, the source named."""
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise InputError(f"{path.name}:{where} not YAML ({getattr(e, 'problem', None) or e})") from None
    _need(isinstance(doc, dict), path, "(top)", "expected a mapping")
    for key in TOP_KEYS:
        _need(key in doc, path, key, "missing")
    src = doc["source"]
    _need(isinstance(src, dict) and all(src.get(k) for k in SOURCE_KEYS), path, "source",
          f"needs {', '.join(SOURCE_KEYS)}")
    _need(bool(src.get("commit") or src.get("version")), path, "source",
          "needs the commit (a repository) or the version (a paper) the numbers come from")
    emb = doc["embsim"]
    for key in ("topology", "baseline"):
        _need(isinstance(emb, dict) and key in emb, path, f"embsim.{key}", "missing")
    _need(("model" in emb) != ("models" in emb), path, "embsim.model",
          "give exactly one of model (one model file) or models (key -> file or null)")
    models = {"": emb["model"]} if "model" in emb else emb["models"]
    _need(isinstance(models, dict) and models and any(models.values()), path, "embsim.models",
          "a mapping of model keys to model files (null: not simulated), at least one file")
    why_not = emb.get("not_simulated") or {}
    for key, file in models.items():
        where = "embsim.model" if "model" in emb else f"embsim.models.{key}"
        _need(file is None or isinstance(file, str), path, where, "a model file path or null")
        _need(file is not None or bool(why_not.get(key)), path, f"embsim.not_simulated.{key}",
              "a model that is not simulated needs the reason")
    gpm = doc["testbed"].get("gpus_per_machine")
    _need(isinstance(gpm, int) and gpm > 0, path, "testbed.gpus_per_machine", "a positive integer")
    systems = []
    for name, s in doc["systems"].items():
        strategy = s.get("embsim")
        _need(bool(s.get("why")), path, f"systems.{name}.why", "missing")
        _need(strategy is None or strategy in STRATEGIES.names(), path, f"systems.{name}.embsim",
              f"{strategy!r} is no embsim strategy ({', '.join(STRATEGIES.names())}) nor null")
        systems.append(System(name, strategy, dict(s.get("options") or {}), s["why"]))
    names = [s.name for s in systems]
    _need(emb["baseline"] in names and dict(zip(names, systems))[emb["baseline"]].strategy,
          path, "embsim.baseline", "must be a system embsim expresses")
    runs = []
    for i, run in enumerate(doc["runs"]):
        measured = run.get("words_per_s") or run.get("throughput")
        machines, per_machine = run.get("machines"), gpm
        if "gpus" in run:        # GPUs of one machine
            _need("machines" not in run, path, f"runs[{i}]", "give machines or gpus, not both")
            _need(isinstance(run["gpus"], int) and 0 < run["gpus"] <= gpm, path,
                  f"runs[{i}].gpus", f"an integer from 1 to testbed.gpus_per_machine ({gpm})")
            machines, per_machine = 1, run["gpus"]
        _need(isinstance(machines, int) and machines > 0, path,
              f"runs[{i}].machines", "a positive integer")
        model = run.get("model", "")
        _need(model in models, path, f"runs[{i}].model",
              f"{model!r} is none of embsim.models ({', '.join(models)})" if "models" in emb
              else "this table has one model (embsim.model): a run names none")
        _need(isinstance(measured, dict) and set(measured) == set(names), path, f"runs[{i}]",
              f"needs a throughput for each of {', '.join(names)}")
        _need(all(isinstance(v, (int, float)) and v > 0 for v in measured.values()), path,
              f"runs[{i}]", "throughputs must be positive numbers")
        runs.append(Run(machines, per_machine, model, dict(measured)))
    _need((ROOT / emb["topology"]).is_file(), path, "embsim.topology", f"no file {emb['topology']}")
    for key, file in models.items():
        _need(file is None or (ROOT / file).is_file(), path,
              "embsim.model" if "model" in emb else f"embsim.models.{key}", f"no file {file}")
    return RankingTable(path, doc["name"], src, emb["topology"], dict(models), gpm,
                        emb["baseline"], tuple(systems), tuple(runs),
                        {k: why_not[k] for k in models if not models[k]})


def simulate_run(table: RankingTable, run: Run) -> dict[str, dict]:
    """embsim's step for each distinct (strategy, options) of the table's systems."""
    out = {}
    for s in table.expressible():
        key = _key(s)
        if key in out:
            continue
        r = simulate(SimulationConfig(
            topology=f"{ROOT / table.topology}:{run.machines}x{run.gpus_per_machine}",
            model=str(ROOT / table.models[run.model]), strategy=s.strategy, strategy_options=dict(s.options),
            iterations=ITERATIONS, efficiency_baseline=False))
        out[key] = {"tokens_per_s": r.tokens_per_s, "step_ms": r.step_time * 1e3,
                    "compute_ms": r.compute * 1e3, "exposed_comm_ms": r.exposed_comm * 1e3,
                    "bytes_per_gpu": {k: float(v) for k, v in r.comm_bytes_per_gpu.items()}}
    return out


def _key(s: System) -> str:
    opts = ",".join(f"{k}={v}" for k, v in sorted(s.options.items()))
    return f"{s.strategy}[{opts}]" if opts else s.strategy


def compare_run(table: RankingTable, measured: dict, simulated: dict) -> dict:
    """Ratios to the baseline, published and simulated, and pairwise order agreement."""
    systems = table.expressible()
    base = next(s for s in systems if s.name == table.baseline)
    rows = []
    for s in systems:
        pub = measured[s.name] / measured[base.name]
        sim = simulated[_key(s)]["tokens_per_s"] / simulated[_key(base)]["tokens_per_s"]
        rows.append({"system": s.name, "strategy": _key(s), "published": measured[s.name],
                     "published_ratio": pub, "simulated": simulated[_key(s)]["tokens_per_s"],
                     "simulated_ratio": sim, "ratio_error": sim / pub - 1})
    pairs = []
    for i, a in enumerate(systems):
        for b in systems[i + 1:]:
            if _key(a) == _key(b):
                continue        # one embsim strategy stands for both: no order to test
            pub = measured[a.name] > measured[b.name]
            sim = simulated[_key(a)]["tokens_per_s"] > simulated[_key(b)]["tokens_per_s"]
            pairs.append({"faster_published": a.name if pub else b.name,
                          "faster_simulated": a.name if sim else b.name, "agree": pub == sim})
    return {"rows": rows, "pairs": pairs}


def scaling(table: RankingTable, runs: list[dict]) -> list[dict]:
    """Each system's throughput over its smallest run's (per model), published and
    simulated: how the strategies scale, which sets how the order changes with the cluster."""
    out = []
    for model in dict.fromkeys(r["model"] for r in runs):
        mine = [r for r in runs if r["model"] == model]
        first = min(mine, key=lambda r: r["gpus"])
        for s in table.expressible():
            def rate(run, kind):
                return next(r[kind] for r in run["rows"] if r["system"] == s.name)
            out.append({"system": s.name, "model": model, "machines": [r["machines"] for r in mine],
                        "gpus": [r["gpus"] for r in mine],
                        "published": [rate(r, "published") / rate(first, "published") for r in mine],
                        "simulated": [rate(r, "simulated") / rate(first, "simulated") for r in mine]})
    return out


def scaling_error(scales: list[dict]) -> dict:
    """Per system, |simulated - published| of its scaling over the smallest run, at every
    larger run of every model: how well each system's own growth is reproduced, apart
    from the ratios (which mix two systems' errors)."""
    out: dict[str, list[float]] = {}
    for sc in scales:
        diffs = [abs(a - b) for a, b in zip(sc["simulated"][1:], sc["published"][1:])]
        out.setdefault(sc["system"], []).extend(diffs)
    return {name: {"mean": sum(d) / len(d), "max": max(d), "points": len(d)}
            for name, d in out.items() if d}


def check_table(table: RankingTable) -> dict:
    runs = []
    for run in table.simulated_runs():
        simulated = simulate_run(table, run)
        runs.append({"model": run.model, "machines": run.machines, "gpus": run.gpus,
                     **compare_run(table, run.measured, simulated), "breakdown": simulated})
    # the headline: systems embsim runs by another strategy than the baseline's (one run by
    # the same strategy has ratio 1 by construction; its spread is the implementations')
    base_key = next(_key(s) for s in table.systems if s.name == table.baseline)
    errors = [abs(r["ratio_error"]) for run in runs for r in run["rows"] if r["strategy"] != base_key]
    pairs = [p for run in runs for p in run["pairs"]]
    # a table inside the repository by its repository path, any other by the path given
    where = table.path.resolve()
    file = str(where.relative_to(ROOT)) if where.is_relative_to(ROOT) else str(table.path)
    scales = scaling(table, runs)
    return {"name": table.name, "file": file, "baseline": table.baseline,
            "source": table.source.get("url"), "runs": runs, "scaling": scales,
            "scaling_error": scaling_error(scales),
            "not_expressible": {s.name: s.why for s in table.systems if not s.strategy},
            "models_not_simulated": dict(table.not_simulated or {}),
            "ratio_error_mean": sum(errors) / len(errors) if errors else None,
            "ratio_error_max": max(errors) if errors else None,
            "pairs_agree": sum(p["agree"] for p in pairs), "pairs": len(pairs)}


def format_table(res: dict) -> str:
    lines = [f"{res['name']} ({res['file']}), baseline {res['baseline']}; source {res['source']}"]
    for run in res["runs"]:
        model = f"{run['model']}, " if run["model"] else ""
        lines.append(f"  {model}{run['machines']} machine(s), {run['gpus']} GPUs")
        lines.append(f"    {'system':<18}{'embsim':<42}{'published':>11}{'ratio':>7}"
                     f"{'simulated':>12}{'ratio':>7}{'err':>8}")
        for r in run["rows"]:
            lines.append(f"    {r['system']:<18}{r['strategy']:<42}{r['published']:>11,.0f}"
                         f"{r['published_ratio']:>7.2f}{r['simulated']:>12,.0f}"
                         f"{r['simulated_ratio']:>7.2f}{r['ratio_error']:>+8.1%}")
        for p in run["pairs"]:
            lines.append(f"    order: published {p['faster_published']} faster, simulated "
                         f"{p['faster_simulated']} faster -> {'agree' if p['agree'] else 'DISAGREE'}")
        for key, b in run["breakdown"].items():
            mb = ", ".join(f"{k} {v / 1e6:,.1f} MB" for k, v in b["bytes_per_gpu"].items())
            lines.append(f"    simulated {key}: step {b['step_ms']:.1f} ms = compute {b['compute_ms']:.1f}"
                         f" + exposed comm {b['exposed_comm_ms']:.1f}; per GPU {mb}")
    for sc in res["scaling"]:
        pub = " ".join(f"{x:.2f}" for x in sc["published"])
        sim = " ".join(f"{x:.2f}" for x in sc["simulated"])
        if sc["model"]:
            lines.append(f"  scaling over {sc['gpus'][0]} GPU(s), {sc['model']}, {sc['system']:<16} at "
                         f"{sc['gpus']} GPUs: published {pub}; simulated {sim}")
        else:
            lines.append(f"  scaling over {sc['machines'][0]} machine(s), {sc['system']:<16} at "
                         f"{sc['machines']} machines: published {pub}; simulated {sim}")
    for name, e in res.get("scaling_error", {}).items():
        lines.append(f"  scaling of {name}: |simulated - published| mean {e['mean']:.2f}, max "
                     f"{e['max']:.2f} over {e['points']} points")
    for name, why in res["not_expressible"].items():
        lines.append(f"  not simulated: {name}: {why}")
    for name, why in res["models_not_simulated"].items():
        lines.append(f"  model not simulated: {name}: {why}")
    if res["ratio_error_mean"] is not None:
        lines.append(f"  headline (systems on another strategy than the baseline's): "
                     f"|simulated/published ratio - 1| mean {res['ratio_error_mean']:.1%}, "
                     f"max {res['ratio_error_max']:.1%}; order agrees on {res['pairs_agree']} of "
                     f"{res['pairs']} pairs")
    return "\n".join(lines)


def main(argv=None) -> int:
    from embsim.toolargs import ToolParser
    ap = ToolParser(prog="benchmarks/ranking_check.py", description=__doc__.splitlines()[0])
    ap.add_argument("tables", nargs="*", type=Path, help="rankings files (default: all)")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--mean-error", type=float, default=None,
                    help="gate: exit 1 if a table's headline mean |ratio error| exceeds this")
    ap.add_argument("--max-error", type=float, default=None,
                    help="gate: exit 1 if a table's headline max |ratio error| exceeds this")
    ap.add_argument("--min-agree", type=int, default=None,
                    help="gate: exit 1 if fewer pairs than this agree in order (per table)")
    args = ap.parse_args(argv)
    paths = args.tables or sorted(RANKINGS.glob("*.yaml"))
    results = []
    for p in paths:
        try:
            table = load_table(p)      # as given: check_table names a table outside by it
        except OSError as e:
            print(f"error: {p}: cannot read ({e.strerror or e})", file=sys.stderr)
            return 2
        except InputError as e:        # names the file and key itself
            print(f"error: {str(e).splitlines()[0]}", file=sys.stderr)
            return 2
        try:
            results.append(check_table(table))
        except InputError as e:
            # a strategy option's refusal names the option, not the file it came from
            print(f"error: {p.name}: {str(e).splitlines()[0]}", file=sys.stderr)
            return 2
    print(json.dumps(results, indent=1) if args.json else "\n\n".join(map(format_table, results)))
    failed = [f for r in results for f in _gate_failures(r, args)]
    return 1 if failed else 0


def _gate_failures(res: dict, args) -> list[str]:
    """The gates a table's headline misses, each printed on stderr."""
    out = []
    if args.mean_error is not None and (res["ratio_error_mean"] or 0.0) > args.mean_error:
        out.append(f"mean ratio error {res['ratio_error_mean']:.4f} > {args.mean_error}")
    if args.max_error is not None and (res["ratio_error_max"] or 0.0) > args.max_error:
        out.append(f"max ratio error {res['ratio_error_max']:.4f} > {args.max_error}")
    if args.min_agree is not None and res["pairs_agree"] < args.min_agree:
        out.append(f"order agrees on {res['pairs_agree']} pairs < {args.min_agree}")
    for f in out:
        print(f"gate failed: {res['name']}: {f}", file=sys.stderr)
    return out


if __name__ == "__main__":
    sys.exit(main())

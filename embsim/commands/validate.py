"""`embsim validate`: how far the simulation is from real measurements.

    embsim validate --nccl-tests LOG|FILE.yaml ... [--topology SPEC] [--json] [--max-error E]
    embsim validate --nccl-tests              # every packaged validation file
    embsim validate --nccl-tests FOLDER       # its logs; one that cannot be scored is noted, left out
    embsim validate --trace traces/X.yaml [--json] [--max-error E]
    embsim validate --training [FILE.yaml ...] [--json] [--mean-error E] [--max-error E]   # published throughput

Exit status 1 (for CI) when a curve's mean |error| exceeds --mean-error, when any point's
|error| exceeds --max-error, or when a strategy of the trace could not be simulated at all
under either bound.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import click

from ..errors import InputError
from ..validate import (collective_errors, collective_json, collective_summary, collective_table,
                        plot_collectives, step_errors, step_json, step_summary, step_table)
from .checks import MAX_ITERATIONS, ErrorBound, count, force_option, plot_option, refuse_overwrite


YAML_SUFFIXES = (".yaml", ".yml")
# what nccl-tests stdout is saved as (besides the project's YAML validation files)
NCCL_TESTS_SUFFIXES = YAML_SUFFIXES + (".log", ".txt", ".out")


def _expand_folders(inputs: tuple[str, ...], suffixes: tuple[str, ...],
                    found_in_folders: set[str] | None = None) -> tuple[str, ...]:
    """A folder stands for its own files of these kinds, in name order (not its
    subfolders: a held-out set kept beside a folder stays out unless named); the files
    found in folders are added to `found_in_folders`."""
    out: list[str] = []
    for item in inputs:
        if not os.path.isdir(item):
            out.append(item)
            continue
        found = sorted(str(p) for p in Path(item).iterdir()
                       if p.is_file() and p.suffix.lower() in suffixes)
        if not found:
            raise InputError(f"validate: {item}: a folder with no {'/'.join(suffixes)} files")
        out += found
        if found_in_folders is not None:
            found_in_folders.update(found)
    return tuple(out)


@click.command("validate")
@click.argument("inputs", nargs=-1, type=click.Path())
@click.option("--nccl-tests", "nccl_tests", is_flag=True,
              help="INPUTS are nccl-tests logs or YAML validation files, or folders of them "
                   "(none: the packaged ones); a log in a folder that cannot be read or scored "
                   "is left out with a one-line note, exit 2 only when no file gives a curve")
@click.option("--trace", type=click.Path(dir_okay=False), help="validate the trace's training steps")
@click.option("--training", is_flag=True,
              help="INPUTS are published training-throughput YAML files, or folders of them "
                   "(none: the packaged ones)")
@click.option("--topology", help="the system the nccl-tests logs were measured on (default: the HGX/DGX preset the log's SXM device name fixes)")
@click.option("--op", help="collective of the logs, when neither the log nor its name says")
@click.option("--placement", type=click.Choice(["in-place", "out-of-place", "best"]),
              default="in-place", show_default=True)
@click.option("--iterations", type=count(2, MAX_ITERATIONS), default=4, show_default=True,
              help="simulated steps (--trace)")
@click.option("--json", "as_json", is_flag=True)
@click.option("--mean-error", type=ErrorBound(),
              help="exit 1 when a curve's mean |error| exceeds this (0.05 = 5 %, or 5%)")
@click.option("--max-error", type=ErrorBound(),
              help="exit 1 when any scored point's |error| exceeds this (nccl-tests: sizes >= 64 KiB; 0.15 = 15 %, or 15%)")
@plot_option("PNG of measured vs simulated curves")
@force_option("--plot file")
def command(inputs, nccl_tests, trace, training, topology, op, placement, iterations, as_json,
            mean_error, max_error, plot, force):
    """Compare simulated nccl-tests curves, training steps or published training
    throughput with real measurements."""
    refuse_overwrite(plot, force, "--plot")
    if bool(nccl_tests) + bool(trace) + bool(training) != 1:
        raise InputError("validate: give exactly one of --nccl-tests [LOG...], --trace FILE "
                         "or --training [FILE...]")
    if inputs and not (nccl_tests or training):
        raise InputError(f"validate: {inputs[0]}: positional files are nccl-tests or training inputs; "
                         "add --nccl-tests or --training")
    in_folders: set[str] = set()
    inputs = _expand_folders(inputs, NCCL_TESTS_SUFFIXES if nccl_tests else YAML_SUFFIXES, in_folders)
    seen: dict[Path, str] = {}
    for path in inputs:          # a file twice (overlapping globs) would count its runs twice
        key = Path(os.path.realpath(path))     # Path.resolve raises on a symlink loop
        if key in seen:
            spelled = "" if seen[key] == path else f" (as {seen[key]} and {path})"
            raise InputError(f"validate: {seen[key]} given twice{spelled}; give it once")
        seen[key] = path
    if not nccl_tests:
        # the trace runs on its own machine, a training file names each run's system
        for flag, value in (("--topology", topology), ("--op", op),
                            ("--placement", placement if placement != "in-place" else None)):
            if value:
                raise InputError(f"validate: {flag} is for --nccl-tests logs, not "
                                 f"{'--trace' if trace else '--training'}")
    for flag, bound in (("--mean-error", mean_error), ("--max-error", max_error)):
        if bound is not None and not bound > 0:
            raise InputError(f"{flag} {bound}: must be positive")
        if bound is not None and bound > 1:
            # "--mean-error 15" meant as 15 % would be a gate that never fails
            click.echo(f"embsim: note: {flag} {bound:g} is {bound:.0%}; for {bound:g} % write "
                       f"{bound / 100:g} or {bound:g}%", err=True)
    if training:
        return _training(list(inputs), iterations, as_json, mean_error, max_error, plot)
    unsimulated = 0
    if nccl_tests:
        skipped: list[str] = []
        # several files: one that cannot be scored is left out (its error below, exit 2)
        failed: list[str] | None = [] if len(inputs) > 1 else None
        curves = collective_errors(list(inputs), topology, placement, op,
                                   frozenset(in_folders), skipped, failed)
        for why in skipped:
            click.echo(f"embsim: note: {why}; left out", err=True)
        if failed and not curves:
            return _left_out(failed)
        if not curves:
            raise InputError(f"validate: no nccl-tests run to score in {', '.join(sorted(in_folders))}")
        # every curve on its own, so one good curve cannot average a bad one away
        summaries = [(c.name, c.summary) for c in curves] + [("all curves", collective_summary(curves))]
        if plot:
            plot_collectives(curves, plot)
        click.echo(json.dumps(collective_json(curves), indent=2) if as_json else collective_table(curves))
        if failed:
            return _left_out(failed)
    else:
        if plot:
            raise InputError("--plot is for --nccl-tests curves")
        rows = step_errors(trace, iterations=iterations)
        unsimulated = sum(r.simulated_s is None for r in rows)
        summaries = [(str(trace), step_summary(rows))]
        click.echo(json.dumps(step_json(rows), indent=2) if as_json else step_table(rows))
        if rows and unsimulated == len(rows):
            click.echo(f"embsim: error: validate: {trace}: no strategy could be simulated", err=True)
            return 1
    problem = None
    if mean_error is not None or max_error is not None:
        if unsimulated:
            problem = f"{unsimulated} strategies could not be simulated"
        for name, s in summaries:
            if problem:
                break
            if s.n == 0 or math.isnan(s.mean):
                problem = f"{name}: no points to compare"
            elif mean_error is not None and s.mean > mean_error:
                problem = f"{name}: {_exceeds('mean', s.mean, mean_error)}"
            elif max_error is not None and s.max > max_error:
                problem = f"{name}: {_exceeds('max', s.max, max_error)}"
    return _verdict(problem)


def _bound_digits(bound: float) -> int:
    """Decimals (at least one) for a percentage to read as the bound given: --max-error
    0.0001 is 0.01 %, not 0.0 %."""
    for digits in range(1, 13):
        if math.isclose(float(f"{bound:.{digits}%}"[:-1]) / 100, bound, rel_tol=1e-9, abs_tol=1e-15):
            return digits
    return 12


def _percents(value: float, bound: float) -> tuple[str, str]:
    """`value` and `bound` as percentages with as many decimals as the bound needs to read
    as given, or more until the two differ (an error over its bound never reads as equal
    to it: "0.0% exceeds --max-error 0.0%")."""
    digits = _bound_digits(bound)
    while digits < 12 and f"{value:.{digits}%}" == f"{bound:.{digits}%}":
        digits += 1
    return f"{value:.{digits}%}", f"{bound:.{digits}%}"


def _exceeds(which: str, value: float | None, bound: float) -> str:
    """'max |error| 0.013% exceeds --max-error 0.010%' (None: no error to compare)."""
    if value is None:
        return f"{which} |error| None exceeds --{which}-error {bound:.{_bound_digits(bound)}%}"
    a, b = _percents(value, bound)
    return f"{which} |error| {a} exceeds --{which}-error {b}"


def _left_out(failed: list[str]) -> int:
    """The inputs left out of a run of several, one error line each: bad input, exit 2."""
    for why in failed:
        click.echo(f"embsim: error: {why} (left out)", err=True)
    return 2


def _verdict(problem: str | None) -> int:
    if problem:
        # the same one-line form as every other error; exit 1 (a result, not bad input)
        click.echo(f"embsim: error: validation failed: {problem}", err=True)
        return 1
    return 0


def _training(paths, iterations, as_json, mean_error, max_error, plot) -> int:
    """Published throughput: headline = mean and max |simulated/measured - 1| over the runs."""
    from ..validate.training import summary, training_errors, training_json, training_table
    if plot:
        raise InputError("--plot is for --nccl-tests curves")
    # several files: one that cannot be simulated is left out (its error below, exit 2),
    # not the end of the others' results
    failed: list[str] | None = [] if len(paths) > 1 else None
    runs, pairs = training_errors(paths, iterations=iterations, failed=failed)
    if runs:
        click.echo(json.dumps(training_json(runs, pairs), indent=2) if as_json else training_table(runs, pairs))
    if failed:
        return _left_out(failed)
    s = summary(runs, pairs)
    mean, worst = s["mean_abs_error"], s["max_abs_error"]
    if mean_error is not None and (mean is None or mean > mean_error):
        return _verdict(_exceeds("mean", mean, mean_error))
    if max_error is not None and (worst is None or worst > max_error):
        return _verdict(_exceeds("max", worst, max_error))
    return 0

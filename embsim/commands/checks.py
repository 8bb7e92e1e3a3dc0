"""Click parameter types that refuse nonsense numbers at the flag: not finite, out of a
stated range, or not a whole number where a count is meant. One line, exit 2, via
click's usage errors (embsim.cli prints them on one line)."""

from __future__ import annotations

import math
from pathlib import Path

import click

from ..atomic import refuse_overwrite  # noqa: F401  (the commands' import point)
from ..errors import InputError

# Upper bounds of counts given on the command line; beyond them a run would take hours
# or exhaust memory before saying anything.
MAX_ITERATIONS = 1000
MAX_BATCH = 1 << 24            # the zoo's tokens-per-GPU cap (recommender batches of 2^20)
MAX_SEQ = 1_000_000
MAX_SEED = 2 ** 63 - 1
MAX_ACCUMULATE = 1024            # micro-batches per optimizer step


class FiniteFloat(click.ParamType):
    """A finite float within [lo, hi] (either end optional)."""

    name = "number"

    def __init__(self, lo: float | None = None, hi: float | None = None):
        self.lo, self.hi = lo, hi

    def convert(self, value, param, ctx):
        if isinstance(value, float) and math.isfinite(value):
            number = value
        else:
            try:
                number = float(value)
            except (TypeError, ValueError):
                self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        if (self.lo is not None and number < self.lo) or (self.hi is not None and number > self.hi):
            lo = "" if self.lo is None else f"{self.lo:g}"
            hi = "" if self.hi is None else f"{self.hi:g}"
            self.fail(f"{value!r} is not in the range {lo}..{hi}", param, ctx)
        return number


class ErrorBound(FiniteFloat):
    """A relative error bound: a fraction (0.15) or a percentage ("15%"). Gates above 100 %
    are real (held-out sets gate at 3.27), so a bare 15 stays 1500 %; the command says so."""

    name = "fraction|N%"

    def __init__(self):
        super().__init__(0, None)

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value.strip().endswith("%"):
            return super().convert(value.strip()[:-1], param, ctx) / 100
        return super().convert(value, param, ctx)


def count(lo: int, hi: int) -> click.IntRange:
    """A whole number lo..hi."""
    return click.IntRange(min=lo, max=hi)


def refuse_empty(command: click.Command) -> click.Command:
    """Make every text or path parameter of `command` (and of its subcommands) refuse an
    empty or blank value: `--jitter ""`, `--nccl-algo ""`, `--out ""` ... would otherwise
    mean "not given" and run with the default, which the user did not ask for."""
    if getattr(command, "_embsim_refuses_empty", False):
        return command
    command._embsim_refuses_empty = True
    for param in command.params:
        if isinstance(param.type, (click.types.StringParamType, click.Path)):
            param.callback = _non_empty(param.callback)
    for sub in getattr(command, "commands", {}).values():
        refuse_empty(sub)
    return command


def _non_empty(callback):
    def check(ctx, param, value):
        values = value if isinstance(value, (tuple, list)) else (value,)
        if any(isinstance(v, str) and not v.strip() for v in values):
            raise click.BadParameter("empty value", ctx=ctx, param=param)
        return callback(ctx, param, value) if callback is not None else value
    return check


def force_option(flags: str):
    """--force: the one way to let a command replace an existing output file."""
    return click.option("--force", is_flag=True, help=f"overwrite an existing {flags}")


def notes_option():
    """--notes summary|all: alike per-table notes condensed (embsim.report.notes), or each."""
    return click.option("--notes", "notes", type=click.Choice(["summary", "all"]), default="summary",
                        show_default=True,
                        help="summary: past four alike per-table notes of a strategy, two and a "
                             "count; all: every note (--json always carries every note)")


def png_path(ctx, param, value):
    """A --plot file name: the charts are PNG (matplotlib picks the format from the
    suffix, so x.txt would get a PNG under a text name and x.pdf a PDF the help does not
    promise)."""
    if value is not None and Path(value).suffix.lower() != ".png":
        raise click.BadParameter(f"{value}: the chart is a PNG; give a .png file name")
    return value


def model_name(ctx, param, value):
    """A --model zoo name checked at the flag, so the one-line error names --model. A
    file is left to the run's loader, whose errors name the file (and its key)."""
    from ..workload import is_model_file, load_spec
    if value is not None and not is_model_file(value):
        load_spec(value, flag="--model")
    return value


MODEL_HELP = "model zoo name (embsim model list) or YAML file"


def model_option(help: str = MODEL_HELP, **kwargs):
    """--model NAME|FILE, a zoo name checked at the flag (model_name); `kwargs`: default,
    required ..."""
    return click.option("--model", callback=model_name, help=help, **kwargs)


def plot_option(help: str):
    """--plot FILE.png, the command's chart (png_path); with force_option("--plot file")
    and refuse_overwrite(plot, force, "--plot")."""
    return click.option("--plot", type=click.Path(dir_okay=False), callback=png_path, help=help)

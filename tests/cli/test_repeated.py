"""embsim.commands.repeated: a single-valued option given twice is refused at parse time
(click alone keeps the last value silently); options meant to repeat still repeat."""

from __future__ import annotations

import click
import pytest

from embsim.cli import main
from embsim.commands.repeated import repeated_option


@click.command()
@click.option("--topology")
@click.option("-b", "--minbytes")
@click.option("--force/--no-force", default=False)
@click.option("--nccl-env", multiple=True)
@click.argument("files", nargs=-1)
def toy(**kw):
    pass


@pytest.mark.parametrize("args, found", [
    (["--topology", "a", "--topology", "b"], "--topology given twice"),
    (["--topology=a", "--topology", "b"], "--topology given twice"),
    (["-b", "8", "--minbytes", "16"], "-b given twice (as -b and --minbytes)"),
    (["-b8", "-b", "16"], "-b given twice"),
    (["--force", "--no-force"], "--force given twice (as --force and --no-force)"),
])
def test_a_repeated_option_is_found(args, found):
    assert found in repeated_option(toy, args)


@pytest.mark.parametrize("args", [
    ["--topology", "a", "--nccl-env", "X=1", "--nccl-env", "Y=2"],   # multiple=True repeats
    ["--topology", "--topology"],       # a value that looks like the flag is the value
    ["--topology", "a", "--", "--topology", "b"],   # after --, arguments
    ["--topology", "a", "x.yaml", "y.yaml"],
])
def test_what_may_repeat_is_left_alone(args):
    assert repeated_option(toy, args) is None


def test_a_group_stops_at_its_subcommand():
    @click.group()
    @click.option("--verbose", is_flag=True)
    def grp(verbose):
        pass
    assert repeated_option(grp, ["--verbose", "show", "--verbose"]) is None
    assert "--verbose given twice" in repeated_option(grp, ["--verbose", "--verbose", "show"])


@pytest.mark.parametrize("argv, flag", [
    (["simulate", "--topology", "dgx-h100", "--model", "tiny-lm", "--topology", "16x8"], "--topology"),
    (["nccl-tests", "-b", "8", "--minbytes", "16"], "-b"),
    (["topology", "show", "dgx-h100", "--json", "--json"], "--json"),
])
def test_the_commands_refuse_it_in_one_line(argv, flag, capsys):
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("embsim: error:") and flag in lines[0], err

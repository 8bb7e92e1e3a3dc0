"""Refuse an option given twice.

click keeps the last value of a repeated single-valued option: `embsim simulate --topology
dgx-h100 ... --topology 16x8` would silently simulate 16x8, and `--force --no-force` would
quietly pick one. A user who typed two values meant one of them, and embsim cannot know
which, so the command is refused at parse time with one line naming the flag (exit 2, via
click's usage error). Options declared `multiple=True` (--nccl-env, --option) are meant to
repeat and are left alone.
"""

from __future__ import annotations

import types

import click

from ..toolargs import first_repeated


def _single_valued(command: click.Command) -> dict[str, tuple[object, bool]]:
    """Every spelling (--x, -x, --no-x) of the command's options that take one value, as
    first_repeated takes them: (the option's identity, whether it takes a value)."""
    return {name: (id(param), not param.is_flag and param.nargs == 1)
            for param in command.params
            if isinstance(param, click.Option) and not param.multiple and not param.count
            for name in (*param.opts, *param.secondary_opts)}


def repeated_option(command: click.Command, args: list[str]) -> str | None:
    """The first option of `command` that `args` gives twice (as typed), else None; a group
    stops at its subcommand (embsim.toolargs.first_repeated scans)."""
    return first_repeated(args, _single_valued(command),
                          stop_at_positional=isinstance(command, click.Group))


def refuse_repeated(command: click.Command) -> click.Command:
    """Make `command` (and its subcommands) refuse a single-valued option given twice."""
    if getattr(command, "_embsim_refuses_repeated", False):
        return command
    command._embsim_refuses_repeated = True
    parse = command.parse_args

    def parse_args(self, ctx, args):
        problem = repeated_option(self, list(args))
        if problem is not None:
            raise click.UsageError(problem, ctx=ctx)
        return parse(ctx, args)

    command.parse_args = types.MethodType(parse_args, command)
    for sub in getattr(command, "commands", {}).values():
        refuse_repeated(sub)
    return command

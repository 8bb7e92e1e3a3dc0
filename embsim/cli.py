"""embsim's command line: one click group holding the commands of embsim.commands.

Thin on purpose: commands parse, call the library, print. Bad input (InputError)
becomes one line on stderr and exit status 2, never a traceback. Installed as the
`embsim` console script; `python -m embsim` runs the same main().
"""

from __future__ import annotations

import click

from . import __version__
from .commands import (calibrate, compare, import_nccl_tests, import_profile, nccl_tests, scale, simulate,
                       sweep, topology, validate)
from .errors import InputError


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="embsim")
def cli() -> None:
    """Simulate embedding-heavy training on GPU clusters, calibrated by real kernels."""


# help lists commands alphabetically, so the order here is only the reading order
for _module in (topology, nccl_tests, simulate, compare, calibrate, validate, import_profile,
                import_nccl_tests, sweep, scale):
    cli.add_command(_module.command)


def main(argv: list[str] | None = None) -> int:
    try:
        # with standalone_mode=False click returns a command's exit code instead of exiting
        rv = cli.main(args=argv, prog_name="embsim", standalone_mode=False)
    except InputError as exc:
        click.echo(f"embsim: error: {exc}", err=True)
        return 2
    except click.exceptions.Abort:
        click.echo("embsim: aborted", err=True)
        return 130
    except click.UsageError as exc:
        # one line, like every other input error (click's own form spans three)
        where = f"{exc.ctx.command_path}: " if exc.ctx is not None else ""
        click.echo(f"embsim: error: {where}{exc.format_message()} (see --help)", err=True)
        return 2
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    return rv if isinstance(rv, int) else 0

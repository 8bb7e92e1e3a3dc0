"""embsim's command line: one click group holding the commands of embsim.commands.

Thin on purpose: commands parse, call the library, print. Bad input (InputError)
becomes one line on stderr and exit status 2, never a traceback. Installed as the
`embsim` console script; `python -m embsim` runs the same main().

Ctrl-C is "embsim: aborted", 130; SIGTERM (kill, timeout) takes the same way out, so an
atomic write's temporary file is removed, as "embsim: terminated", 143. An output that
cannot be written (a full disk) is one line and status 1; one whose reader has gone
(`| head`) ends the command silently with 141, as a tool killed by SIGPIPE would.
"""

from __future__ import annotations

import importlib
import sys

import click

from . import __version__
from .errors import InputError, one_line
from .exits import (OutputFailed, OutputGone, discard_stdout, output_failures_raised, say,
                    sigterm_interrupts)

# name -> (module in embsim.commands, the command's one-line help). Commands are imported
# only when run, so `embsim --help` / `--version` start without numpy, networkx or the
# simulator; tests/test_cli_startup.py checks this table against the commands themselves.
COMMANDS = {
    "calibrate": ("calibrate", "Capture per-layer times, collective sweeps and real training steps into a trace."),
    "compare": ("compare", "Simulate every strategy x scheduler and rank them: the rows that fit in memory "
                "first, then by step time."),
    "import-nccl-tests": ("import_nccl_tests",
                          "Turn nccl-tests stdout logs into the collective curves of an embsim trace."),
    "import-profile": ("import_profile", "Turn a Kineto Chrome trace (record_function('fwd:<layer>') or "
                       "nn.Module ranges) into per-layer forward/backward times of an embsim trace."),
    "model": ("model", "Inspect models (the zoo in embsim/workload/zoo/, or your own YAML)."),
    "nccl-tests": ("nccl_tests", "Print the table nccl-tests would print, from the simulated collective times."),
    "scale": ("scale", "Simulate MODEL with STRATEGY at each GPU count and report how it scales."),
    "simulate": ("simulate", "Simulate data-parallel training steps and say where the time goes."),
    "sweep": ("sweep", "Run every point of SWEEP_FILE; re-running skips the points already in --out."),
    "topology": ("topology", "Inspect cluster topologies (presets in topologies/, or your own YAML)."),
    "validate": ("validate", "Compare simulated nccl-tests curves, training steps or published training throughput with real measurements."),
}


class LazyGroup(click.Group):
    """A click group that imports a command's module only when that command runs."""

    def list_commands(self, ctx) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx, name: str):
        if name not in COMMANDS:
            return None
        from .commands.checks import refuse_empty
        from .commands.repeated import refuse_repeated
        command = importlib.import_module(f"embsim.commands.{COMMANDS[name][0]}").command
        return refuse_repeated(refuse_empty(command))

    # both under click's own EPIPE handling, which exits 1 without a word
    def make_context(self, *args, **kwargs):
        with output_failures_raised():
            return super().make_context(*args, **kwargs)      # --help prints here

    def invoke(self, ctx):
        with output_failures_raised():
            return super().invoke(ctx)

    def format_commands(self, ctx, formatter) -> None:
        limit = formatter.width - 6 - max(len(n) for n in COMMANDS)
        rows = [(name, _one_line(help, limit)) for name, (_, help) in sorted(COMMANDS.items())]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


def _one_line(text: str, limit: int) -> str:
    """A command's short help cut at a word to fit one line of `embsim --help`, as click
    does for its own groups (click's helper for this is deprecated)."""
    if len(text) <= limit:
        return text
    cut = text[: max(limit - 3, 1)].rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:") + "..."


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="embsim")
def cli() -> None:
    """Simulate embedding-heavy training on GPU clusters, calibrated by real kernels."""


_NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", None)


def main(argv: list[str] | None = None) -> int:
    terminated: list = []
    with sigterm_interrupts(terminated):
        try:
            with output_failures_raised():
                rv = _run(argv)
                if sys.stdout is not None:
                    sys.stdout.flush()      # a buffered output's last write fails here, not at exit
                return rv
        except (click.exceptions.Abort, KeyboardInterrupt):
            say("embsim: terminated" if terminated else "embsim: aborted")
            return 143 if terminated else 130
        except OutputGone:
            discard_stdout()
            return 141
        except OutputFailed as exc:
            discard_stdout()
            say(f"embsim: error: cannot write the output: {exc}")
            return 1


def _run(argv: list[str] | None) -> int:
    try:
        # with standalone_mode=False click returns a command's exit code instead of exiting
        rv = cli.main(args=argv, prog_name="embsim", standalone_mode=False)
    except InputError as exc:
        click.echo(f"embsim: error: {one_line(exc)}", err=True)
        return 2
    except click.UsageError as exc:
        if _NO_ARGS_IS_HELP is not None and isinstance(exc, _NO_ARGS_IS_HELP):
            # a bare `embsim` or `embsim topology`: its help, not an error (click >= 8.2
            # raises the whole help text as a usage error)
            click.echo(exc.ctx.get_help())
            return 0
        # one line, like every other input error (click's own form spans three)
        where = f"{exc.ctx.command_path}: " if exc.ctx is not None else ""
        click.echo(f"embsim: error: {one_line(where + exc.format_message())} (see --help)", err=True)
        return 2
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    return rv if isinstance(rv, int) else 0

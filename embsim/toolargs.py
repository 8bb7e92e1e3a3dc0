"""Arguments of the `python -m embsim....` analysis tools, held to the embsim command's rules.

argparse alone prints its usage and the error over several lines, keeps the last value of an
option given twice (`--model a --model b` runs b), and takes an unambiguous prefix of an option
(`--mod`) for the option. ToolParser makes a bad argument one line naming it, exit status 2
(as `embsim` and embsim.commands.repeated do), refuses a single-valued option given twice, and
takes options only as spelled.
"""

from __future__ import annotations

import argparse
import sys


def _single_valued(parser: argparse.ArgumentParser) -> dict[str, tuple[object, bool]]:
    """Every spelling of the parser's options that may be given once (not append/count/help),
    as first_repeated takes them: (the option's identity, whether it takes a value)."""
    repeatable = (argparse._AppendAction, argparse._AppendConstAction, argparse._CountAction,
                  argparse._HelpAction, argparse._ExtendAction)
    return {name: (id(action), action.nargs != 0) for action in parser._actions
            if not isinstance(action, repeatable) for name in action.option_strings}


def first_repeated(args: list[str], options: dict[str, tuple[object, bool]],
                   stop_at_positional: bool = False) -> str | None:
    """The first option `args` gives twice (as typed), else None. `options` maps each
    spelling (`--x`, `-x`, `--no-x`) of a single-valued option to (the option's identity,
    whether it takes a value); spellings not in it are not counted.
    Scanned as parsers read: `--name value`, `--name=value`, `-x value` and `-xvalue`; a
    value is skipped whatever it looks like, `--` ends the options, and with
    `stop_at_positional` so does the first positional (a command group's subcommand). Shared
    by the analysis tools (ToolParser) and the embsim commands (embsim.commands.repeated)."""
    seen: dict[object, str] = {}
    i = 0
    while i < len(args):
        token = args[i]
        if token == "--":
            break
        if token.startswith("--"):
            name, attached = token.split("=", 1)[0], "=" in token
        elif token.startswith("-") and len(token) > 1:
            name, attached = token[:2], len(token) > 2
        else:
            if stop_at_positional:
                break
            i += 1
            continue
        found = options.get(name)
        if found is not None:
            key, takes_value = found
            if key in seen:
                first = seen[key]
                spelled = "" if first == name else f" (as {first} and {name})"
                return f"{first} given twice{spelled}; give it once"
            seen[key] = name
            if takes_value and not attached:
                i += 1                    # its value
        i += 1
    return None


def repeated_option(parser: argparse.ArgumentParser, args: list[str]) -> str | None:
    """The first single-valued option of `parser` that `args` gives twice, else None."""
    return first_repeated(args, _single_valued(parser))


class ToolParser(argparse.ArgumentParser):
    """argparse.ArgumentParser for the analysis tools: errors in one line, exit status 2."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")

    def parse_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        problem = repeated_option(self, args)
        if problem is not None:
            self.error(problem)
        return super().parse_args(args, namespace)


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (0 would otherwise read as 'not given')."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: must be at least 1")
    return value


def no_arguments(module: str, doc: str | None) -> None:
    """The command line of a `python -m` tool that takes no arguments: -h prints what it
    does; anything else is one line and exit status 2 rather than silently ignored."""
    ToolParser(prog=f"python -m {module}", description=(doc or "").strip().split("\n")[0]).parse_args()

"""The command line starts without the simulator: `embsim --help` / `--version` import
neither numpy nor networkx, and a command's module is imported only when it runs.
The lazy table in embsim.cli must match the commands themselves."""

import importlib
import pkgutil
import subprocess
import sys

import embsim.commands
from embsim.cli import COMMANDS


def test_lazy_table_matches_the_commands():
    modules = {m.name for m in pkgutil.iter_modules(embsim.commands.__path__)
               if hasattr(importlib.import_module(f"embsim.commands.{m.name}"), "command")}
    assert {module for module, _ in COMMANDS.values()} == modules
    for name, (module, short) in COMMANDS.items():
        command = importlib.import_module(f"embsim.commands.{module}").command
        assert command.name == name
        assert command.get_short_help_str(limit=1000) == short


def _modules_after(args: list[str]) -> set[str]:
    code = ("import sys; from embsim.cli import main\n"
            f"try:\n    main({args!r})\nexcept SystemExit:\n    pass\n"
            "print(' '.join(sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return set(out.split()[-1000000:])


def test_help_and_version_import_no_simulator():
    for args in (["--version"], ["--help"]):
        loaded = _modules_after(args)
        assert not {"numpy", "networkx", "simpy", "embsim.engine", "embsim.topology"} & loaded, args


def test_topology_show_imports_no_numpy_networkx_or_simulator():
    loaded = _modules_after(["topology", "show", "dgx-h100", "--json"])
    assert not {"numpy", "networkx", "simpy", "embsim.engine", "embsim.collectives"} & loaded


def test_bare_group_prints_its_help_not_an_error(capsys):
    """`embsim` / `embsim topology` alone: the help on stdout, exit 0 (click >= 8.2 raises
    it as a usage error, which came out as 'embsim: error: embsim: Usage: ...')."""
    from embsim.cli import main
    for argv, expect in (([], "Commands:"), (["topology"], "show")):
        assert main(argv) == 0
        out, err = capsys.readouterr()
        assert expect in out and out.startswith("Usage:") and err == ""

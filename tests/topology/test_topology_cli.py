import json

import pytest
from click.testing import CliRunner

from embsim.commands.topology import command
from embsim.errors import InputError

from topology_samples import SMALL_PCIE, write_yaml  # noqa: F401 (fixture)


def _cli_main():
    from embsim import cli
    return cli


def test_show_json_through_cli(capsys):
    cli = _cli_main()
    assert cli.main(["topology", "show", "dgx-h100:2x8", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert (s["n_gpus"], s["preset"], s["network"]["rails"]) == (16, "dgx-h100", 8)


def test_show_table_through_cli_runner():
    cli = _cli_main()
    result = CliRunner().invoke(cli.cli, ["topology", "show", "pcie-rtx3090:2x8"])
    assert result.exit_code == 0, result.output
    assert "RTX-3090" in result.output and "pcie" in result.output and "nic" in result.output


@pytest.mark.parametrize("args, needle", [
    (["topology", "show", "16x9"], "'16x9'"),
    (["topology", "show", "0x8"], "'0x8'"),
    (["topology", "show", "nope"], "unknown preset 'nope'"),
])
def test_bad_spec_exits_2_with_one_line(capsys, args, needle):
    cli = _cli_main()
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert needle in err and err.startswith("embsim: error:") and err.count("\n") == 1


def test_bad_file_exits_2_with_file_key_line(capsys, write_yaml):
    cli = _cli_main()
    path = write_yaml(SMALL_PCIE.replace("  hbm_gbps: 1000\n", "  hbm_gbps: 1000\n  colour: red\n"))
    assert cli.main(["topology", "show", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "gpu.colour" in err and "(line 9)" in err and err.count("\n") == 1


def test_command_alone_without_cli_py(write_yaml):
    # The command itself, independent of embsim.cli: output and the InputError cli.main turns into exit 2.
    runner = CliRunner()
    result = runner.invoke(command, ["show", "dgx-a100", "--json"])
    assert result.exit_code == 0 and json.loads(result.output)["gpu"]["model"] == "A100-SXM4-80GB"
    result = runner.invoke(command, ["show", "dgx-a100:1x9"])
    assert isinstance(result.exception, InputError)
    result = runner.invoke(command, ["list"])
    assert "dgx-b200" in result.output.split()


@pytest.mark.parametrize("spec, words, not_words", [
    ("dgx-h100", "no network injection (one node)", "0 GB/s injection"),
    ("dgx-h100:2x8", "400 GB/s injection per node", "no network injection"),
])
def test_show_table_injection_line(spec, words, not_words):
    result = CliRunner().invoke(_cli_main().cli, ["topology", "show", spec])
    assert result.exit_code == 0, result.output
    flat = " ".join(result.output.split())        # rich wraps the Totals line
    assert words in flat and not_words not in flat

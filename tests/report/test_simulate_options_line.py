"""simulate says which options its strategy and scheduler ran with, and where each came
from, in text and JSON; its scaling efficiency names its one-GPU base."""

import json

from click.testing import CliRunner

from embsim.cli import cli


def test_text_and_json_carry_the_options_in_effect():
    args = ["simulate", "--topology", "1x2", "--model", "lstm-lm1b", "--batch", "4", "--iterations", "2",
            "--scheduler", "priority", "--option", "credit_bytes=16e6"]
    text = CliRunner().invoke(cli, args)
    assert text.exit_code == 0, text.output
    assert "options: priority: credit_bytes=16000000 (--option)" in text.output
    flat = " ".join(text.output.replace("│", " ").split())          # cells wrap
    assert "2 x one GPU running allreduce/priority itself" in flat
    doc = json.loads(CliRunner().invoke(cli, args + ["--json"]).output)
    used = {(o["component"], o["key"]): o for o in doc["options"]} if isinstance(doc["options"], list) \
        else doc["options"]
    assert "credit_bytes" in json.dumps(used) and "--option" in json.dumps(used)

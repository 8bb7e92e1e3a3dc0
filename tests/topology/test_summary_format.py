"""`embsim topology show`: totals readable at any size."""


def test_device_memory_total_has_no_exponent(capsys):
    from embsim.cli import main
    assert main(["topology", "show", "2048x8"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "1,310,720 GB device memory" in text and "e+" not in text

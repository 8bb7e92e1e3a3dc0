from embsim.suggest import nearest, normalise


def test_normalise_folds_case_and_underscores():
    assert normalise(" DGX_H100 ") == "dgx-h100"


def test_words_in_another_order_come_before_typos():
    names = ["pcie-h100", "dgx-h100", "dgx-a100"]
    assert nearest("h100-pcie", names)[0] == "pcie-h100"
    assert nearest("dgx-h10", names)[0] == "dgx-h100"


def test_an_alias_suggests_its_name_and_nothing_is_suggested_for_noise():
    assert nearest("p5.48xlarg", ["aws-p5"], {"p5.48xlarge": "aws-p5"}) == ["aws-p5"]
    assert nearest("zzzz", ["dgx-h100"]) == []

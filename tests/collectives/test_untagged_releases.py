"""--nccl-version with a patch level no NCCL tag carries (2.21.99; B200 systems shipped an
untagged 2.27.1): accepted, as every MAJOR.MINOR.PATCH of a modelled minor is, and said to
be modelled as the newest tagged release of its minor not after it -- the one whose
tables it gets -- instead of being printed as if 2.21.99 had been modelled."""

from __future__ import annotations

from embsim.cli import main
from embsim.collectives import CollectiveModel
from embsim.collectives.constants import VERSIONS, constants_for, known_patches, release_label
from embsim.topology import load_topology


def test_an_untagged_patch_is_said_to_be_modelled_as_its_nearest_tagged_release():
    assert release_label("2.21.99") == "2.21.99 (not a tagged release: modelled as 2.21.5)"
    assert release_label("2.27.1") == "2.27.1 (not a tagged release: modelled as 2.27.3)"
    assert release_label("v2.28.8-1") == "2.28.8 (not a tagged release: modelled as 2.28.7)"
    # tagged releases and bare minors read as given
    assert release_label("2.21.5") == "2.21.5"
    assert release_label("2.28.3+cuda12.8") == "2.28.3"
    assert release_label("2.21") == "2.21"
    assert release_label(None) == "2.30"


def test_the_stand_in_has_the_tables_the_untagged_patch_gets():
    """The label never names another table than the one simulated: every patch of every
    modelled minor gets the constants of the release its label names."""
    for minor in VERSIONS:
        for patch in range(0, 21):
            given = f"{minor}.{patch}"
            label = release_label(given)
            named = label.rsplit(" ", 1)[-1].rstrip(")") if "modelled as" in label else given
            assert constants_for(given) is constants_for(named), given
            if "modelled as" in label:
                assert named in known_patches(minor)


def test_outputs_say_it(capsys):
    pair = load_topology("dgx-h100:1x2")
    assert CollectiveModel(pair, nccl_version="2.21.99").release == \
        "2.21.99 (not a tagged release: modelled as 2.21.5)"
    assert main(["nccl-tests", "--topology", "dgx-h100:1x2", "--nccl-version", "2.21.99", "-e", "1K"]) == 0
    out = capsys.readouterr().out
    assert "NCCL 2.21.99 (not a tagged release: modelled as 2.21.5) model" in out
    assert "NCCL 2.21.99 model" not in out

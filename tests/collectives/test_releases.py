"""Which modelled release stands in for a logged NCCL version, and what the output says."""

from embsim.collectives.releases import proto_filter, release_view
from embsim.collectives.validation import curve_errors, DATA_DIR


def test_modelled_releases_need_no_note():
    for logged in ("2.18.5", "2.19", "2.27.7", "2.30.4"):
        view = release_view(logged)
        assert view.note == "" and view.exclude_protos == ()
        assert view.table == ".".join(logged.split(".")[:2])


def test_model_version_keeps_the_patch_level_of_a_modelled_release():
    assert release_view("2.29.2").version == "2.29.2"
    assert release_view("2.29.2+cuda13.1").version == "2.29.2"
    assert release_view("2.29").version == "2.29"
    assert release_view("2.9.9").version == "2.18"      # a stand-in is the table itself
    assert release_view("2.31.1").version == "2.30"
    assert release_view("unknown").version is None


def test_unknown_release_says_which_model_ran():
    for logged in (None, "", "unknown"):
        view = release_view(logged)
        assert view.table is None
        assert "not given" in view.note and "2.30" in view.note


def test_older_release_says_2_18_stands_in():
    view = release_view("2.9.9")
    assert view.table == "2.18"
    assert "2.9.9 predates" in view.note and "2.18" in view.note
    assert view.exclude_protos == ()          # 2.9 had LL128
    assert proto_filter(view, None) is None


def test_release_before_ll128_excludes_it():
    view = release_view("2.4")
    assert view.exclude_protos == ("LL128",)
    assert "LL128 excluded" in view.note
    assert proto_filter(view, None) == "^LL128"
    # the measurement's own NCCL_PROTO wins
    assert proto_filter(view, "Simple") == "Simple"


def test_newer_release_says_2_30_stands_in():
    view = release_view("2.31.1")
    assert view.table == "2.30" and "newer" in view.note


def test_validation_output_carries_the_note():
    c = curve_errors(DATA_DIR / "dgx1-v100-allreduce.yaml")
    assert "LL128 excluded" in c.system
    assert all(p.proto != "LL128" for p in c.points)
    c = curve_errors(DATA_DIR / "oci-bm-gpu4-8-allreduce.yaml")
    assert "2.9.9 predates" in c.system
    c = curve_errors(DATA_DIR / "azure-nd-a100-v4-allreduce.yaml")
    assert "predates" not in c.system and "not given" not in c.system


def test_the_flag_takes_the_forms_users_copy():
    """--nccl-version: NCCL's banner ("NCCL version 2.18.5+cuda12.2") and the git tag /
    package release ("v2.28.9-1") name the same release as 2.18.5 / 2.28.9; anything else
    that is no modelled release stays a one-line error naming the flag."""
    import pytest
    from embsim.collectives.constants import constants_for
    from embsim.errors import InputError
    assert constants_for("2.18.5+cuda12.2") is constants_for("2.18.5")
    assert constants_for("v2.28.9-1") is constants_for("2.28.9") is constants_for("2.28.9-1")
    for bad in ("2.17.1", "2.28.9-x", "v3.0", "2.28.9.1"):
        with pytest.raises(InputError, match=r"^--nccl-version .*releases 2\.18 to 2\.30"):
            constants_for(bad)


def test_a_log_in_tag_form_names_the_same_release():
    """The shared parse (constants.release_text) reaches logged versions too: a log that
    says v2.28.9-1 is modelled as 2.28.9, as --nccl-version takes it."""
    view = release_view("v2.28.9-1")
    assert view.table == "2.28" and view.version == "2.28.9" and view.note == ""


def test_two_gpus_get_nvls_only_from_2_28_7():
    """nvls.cc ncclNvlsInit returned without NVLS for `gpuCount <= 2` up to v2.28.3-1 and
    for `gpuCount < 2` from v2.28.7-1: NVLS on two H100s exists only from 2.28.7 on, and a
    forced NCCL_ALGO=NVLS on an older release is refused, not run."""
    import pytest
    from embsim.collectives import CollectiveModel
    from embsim.errors import InputError
    from embsim.topology import load_topology
    pair, three = load_topology("dgx-h100:1x2"), load_topology("dgx-h100:1x3")
    for version in ("2.18.5", "2.27.7", "2.28.3"):
        assert CollectiveModel(pair, nccl_version=version).shape((0, 1))[1].nvls is None
        assert CollectiveModel(three, nccl_version=version).shape((0, 1, 2))[1].nvls is not None
        with pytest.raises(InputError, match="nothing NCCL can run"):
            CollectiveModel(pair, algo="NVLS", nccl_version=version).plan("all_reduce", 1 << 30, (0, 1))
    for version in ("2.28.9", "2.29.2", "2.30"):
        plan = CollectiveModel(pair, algo="NVLS", nccl_version=version).plan("all_reduce", 1 << 30, (0, 1))
        assert plan.algo == "NVLS"


def test_outputs_name_the_patch_release_that_was_modelled(capsys):
    # 2.28.3 and 2.28.9 have different tables (NVLS on two GPUs): "NCCL 2.28 model" for
    # both hid which one ran
    from embsim.cli import main
    from embsim.collectives import CollectiveModel
    from embsim.topology import load_topology
    pair = load_topology("dgx-b200:1x2")
    assert CollectiveModel(pair, nccl_version="2.28.3").release == "2.28.3"
    assert CollectiveModel(pair, nccl_version="v2.28.9-1").release == "2.28.9"
    assert CollectiveModel(pair, nccl_version="2.28").release == "2.28"
    assert CollectiveModel(pair).release == "2.30"
    assert main(["nccl-tests", "--topology", "dgx-b200:1x2", "--nccl-version", "2.28.3", "-e", "1M"]) == 0
    assert "NCCL 2.28.3 model" in capsys.readouterr().out

"""A publication date without a release: the newest release tagged by then stands in."""

import datetime as dt

import pytest

from embsim.collectives.release_dates import RELEASE_DATES, newest_release_by, parse_date
from embsim.collectives.releases import release_view
from embsim.collectives.validation import curve_errors
from embsim.errors import InputError


def test_table_is_in_date_order_with_one_row_per_release():
    dates = [dt.date.fromisoformat(d) for _, d in RELEASE_DATES]
    assert dates == sorted(dates)
    versions = [v for v, _ in RELEASE_DATES]
    assert len(versions) == len(set(versions))


def test_newest_by_version_not_by_date():
    # 2.18.6 (2023-10-10) was tagged after 2.19.3 (2023-09-26): the newer release is 2.19.3
    assert newest_release_by(dt.date(2023, 10, 19)) == "2.19.3"
    assert newest_release_by(dt.date(2023, 9, 25)) == "2.18.5"
    assert newest_release_by(dt.date(2024, 2, 13)) == "2.20.3"      # the tag's own day counts
    assert newest_release_by(dt.date(2018, 1, 1)) is None


def test_parse_date_takes_yaml_dates_and_iso_text():
    assert parse_date(dt.date(2023, 12, 15)) == dt.date(2023, 12, 15)
    assert parse_date("2023-12-15") == dt.date(2023, 12, 15)
    assert parse_date("December 2023") is None


def test_release_view_from_a_date_names_the_bound():
    view = release_view("unknown", "2023-12-15")
    assert view.version == "2.19.4"
    assert "published 2023-12-15" in view.note and "2.19.4" in view.note
    # an old date goes through the old-release path: its stand-in table and notes
    old = release_view(None, dt.date(2019, 6, 30))
    assert old.table == "2.18" and old.exclude_protos == ("LL128",)
    assert "2.4.8" in old.note
    # a stated release wins over the date
    assert release_view("2.27.7", "2023-12-15").version == "2.27.7"
    # a date before every tag leaves the default
    assert "not given" in release_view(None, "2017-01-01").note


CURVE = """system: 8x A100
preset: dgx-a100
nodes: 1
gpus_per_node: 8
op: sendrecv
{extra}busbw:
  1073741824: 195.1
"""


def test_a_curve_file_dated_runs_that_release(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(CURVE.format(extra="published: '2023-10-19'\n"))
    dated = curve_errors(f)
    assert "2.19.3, the newest release by then" in dated.system and dated.nccl == "<=2.19.3"
    f.write_text(CURVE.format(extra=""))
    undated = curve_errors(f)
    # 2.19 caps a 1 GiB SendRecv at 16 channels; 2.30 splits it over 32
    assert dated.points[0].simulated_busbw < 0.9 * undated.points[0].simulated_busbw


def test_a_bad_date_is_one_line_naming_the_key(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(CURVE.format(extra="published: 'soon'\n"))
    with pytest.raises(InputError, match=r"published.*must be a date"):
        curve_errors(f)

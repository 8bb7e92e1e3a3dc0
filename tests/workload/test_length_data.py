"""The shipped length histograms (workload/datasets): the published numbers, read back."""

import numpy as np
import pytest

from embsim.errors import InputError
from embsim.workload import length_data
from embsim.workload.length_data import list_datasets, load_histogram


def test_wikipedia_is_graphcores_histogram():
    h = load_histogram("wikipedia")
    assert h.max_length == 512 and len(h.counts) == 512
    # the packedBERT README: "Packed 16279552 sequences", "Speed-up theoretical limit: 2.0013"
    assert sum(h.counts) == 16_279_552
    assert 512 / h.mean == pytest.approx(2.0013, abs=5e-5)
    assert h.counts[:4] == (0, 0, 0, 0) and h.counts[-1] == 3_815_044
    assert "graphcore/tutorials" in h.source and "e9dbe48" in h.source


def test_squad_is_shipped_too():
    assert {"wikipedia", "squad-1.1"} <= set(list_datasets())
    h = load_histogram("squad-1.1")
    assert h.max_length == 384 and len(h.counts) == 384 and h.counts[-1] == 1054


def test_probabilities_cut_longer_samples_to_the_run_length():
    h = load_histogram("wikipedia")
    full = h.probabilities(512)
    assert full.size == 512 and full.sum() == pytest.approx(1.0)
    cut = h.probabilities(128)
    assert cut.size == 128 and cut.sum() == pytest.approx(1.0)
    assert np.allclose(cut[:127], full[:127])
    assert cut[-1] == pytest.approx(full[127:].sum())
    # beyond the data's own maximum: the histogram as it is
    assert np.allclose(load_histogram("squad-1.1").probabilities(512)[:384].sum(), 1.0)


def test_unknown_and_bad_files_are_one_line_errors(tmp_path, monkeypatch):
    with pytest.raises(InputError, match="unknown length data set 'nope' \\(known: .*wikipedia"):
        load_histogram("nope")
    monkeypatch.setattr(length_data, "DATASETS_DIR", tmp_path)
    load_histogram.cache_clear()
    try:
        src = "source: {repo: a/b, path: p, commit: c, license: MIT}\n"
        (tmp_path / "short.yaml").write_text("name: short\nmax_length: 3\n" + src + "counts: [[1, 2]]\n")
        with pytest.raises(InputError, match="short.yaml: counts.*needs 3 counts"):
            load_histogram("short")
        (tmp_path / "neg.yaml").write_text("name: neg\nmax_length: 2\n" + src + "counts: [[1, -2]]\n")
        with pytest.raises(InputError, match="neg.yaml: counts.0.1"):
            load_histogram("neg")
        (tmp_path / "nosrc.yaml").write_text("name: nosrc\nmax_length: 1\nsource: {repo: a/b}\ncounts: [[1]]\n")
        with pytest.raises(InputError, match="nosrc.yaml: source"):
            load_histogram("nosrc")
    finally:
        load_histogram.cache_clear()

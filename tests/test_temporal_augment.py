"""UCR Augmented: the random-walk padding matches its definition, is seeded, and round-trips its files."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from sibscan.cli import app
from sibscan.errors import SibscanError
from sibscan.kernels.walkpad import walk_pad, walk_pad_reference
from sibscan.temporal import augment_pair, load_series, pad_length
from sibscan.temporal.series import SeriesPair
from sibscan.temporal.writers import choose_format, write_series
from temporal_data import aeon_dataset

runner = CliRunner()


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 5), c=st.integers(1, 3), length=st.integers(1, 12), pad=st.integers(0, 9),
       seed=st.integers(0, 2**16))
def test_walk_pad_equals_the_step_by_step_reference(n, c, length, pad, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, c, length))
    n_head = rng.integers(0, pad + 1, size=n)
    sh, stl = rng.normal(size=(n, c, pad)), rng.normal(size=(n, c, pad))
    np.testing.assert_array_equal(walk_pad(x, n_head, sh, stl), walk_pad_reference(x, n_head, sh, stl))


def test_padding_follows_the_definition():
    data = load_series(*aeon_dataset("ArrowHead"))
    length = data.length
    aug = augment_pair(data, 0.3, seed=7)
    pad = pad_length(0.3, length)
    assert pad == int(0.3 * length) and aug.record["pad_length"] == pad
    x, n_head = aug.data.X_train[:, 0, :], aug.n_head_train
    assert x.shape == (len(data.y_train), length + pad)
    assert n_head.min() >= 0 and n_head.max() <= pad and len(np.unique(n_head)) > 3  # U{0..l}: spread out
    z = (data.X_train[:, 0] - data.X_train[:, 0].mean(1, keepdims=True)) / data.X_train[:, 0].std(1, keepdims=True)
    steps_head, steps_tail = [], []
    for i, h in enumerate(n_head):
        np.testing.assert_allclose(x[i, h:h + length], z[i])  # the z-normalised series, shifted by its head
        if h:
            assert abs(x[i, h - 1] - z[i, 0]) < 0.06  # continuity at the head join: one step of sigma 0.01
            steps_head.append(np.diff(x[i, :h + 1]))  # walk steps, read back from the series outwards
        if h < pad:
            assert abs(x[i, h + length] - z[i, -1]) < 0.06
            steps_tail.append(np.diff(x[i, h + length - 1:]))
    for steps in (np.concatenate(steps_head), np.concatenate(steps_tail)):
        assert len(steps) > 500
        assert abs(steps.std() - 0.01) < 0.001 and abs(steps.mean()) < 0.002


def test_augmentation_is_seeded_and_train_test_draw_apart():
    data = load_series(*aeon_dataset("GunPoint"))
    a, b = augment_pair(data, 0.2, seed=1), augment_pair(data, 0.2, seed=1)
    np.testing.assert_array_equal(a.data.X_train, b.data.X_train)
    np.testing.assert_array_equal(a.n_head_test, b.n_head_test)
    c = augment_pair(data, 0.2, seed=2)
    assert not np.array_equal(a.n_head_train, c.n_head_train)


def test_augment_cli_writes_reproducible_files_that_load_back(tmp_path):
    train, test = aeon_dataset("ItalyPowerDemand")
    outs = []
    for k in range(2):
        out = tmp_path / f"o{k}"
        res = runner.invoke(app, ["augment", str(train), str(test), "--padding", "0.1,0.5", "--out", str(out),
                                  "--seed", "3", "--json"])
        assert res.exit_code == 0, res.output
        outs.append(out)
    files = sorted(p.name for p in outs[0].iterdir())
    assert files == sorted(f"ItalyPowerDemand_pad{p}_{s}" for p in ("0.1", "0.5")
                           for s in ("TRAIN.tsv", "TEST.tsv", "augment.json"))
    for name in files:  # byte for byte
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes()
    back = load_series(outs[0] / "ItalyPowerDemand_pad0.5_TRAIN.tsv", outs[0] / "ItalyPowerDemand_pad0.5_TEST.tsv")
    data = load_series(train, test)
    again = augment_pair(data, 0.5, seed=3)
    np.testing.assert_array_equal(back.X_test, again.data.X_test)  # exact round trip
    np.testing.assert_array_equal(back.y_train, data.y_train)
    assert back.length == data.length + int(0.5 * data.length)


def test_ts_writer_round_trips_multivariate_and_text_labels(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 3, 6))
    y = np.array(["up", "down", "up", "down"])
    assert choose_format(x, y) == "ts"
    with pytest.raises(SibscanError, match="multivariate"):
        choose_format(x, y, "tsv")
    write_series(tmp_path / "m_TRAIN.ts", x, y, fmt="ts", name="m")
    write_series(tmp_path / "m_TEST.ts", x[:2], y[:2], fmt="ts", name="m")
    back = load_series(tmp_path / "m_TRAIN.ts", tmp_path / "m_TEST.ts")
    np.testing.assert_array_equal(back.X_train, x)
    np.testing.assert_array_equal(back.y_train, y)
    with pytest.raises(SibscanError, match="cannot be written"):
        write_series(tmp_path / "bad.ts", x, np.array(["a b"] * 4), fmt="ts")


def test_augment_cli_bad_input(tmp_path):
    train, test = aeon_dataset("GunPoint")
    res = runner.invoke(app, ["augment", str(train), str(test), "--padding", "abc", "--out", str(tmp_path)])
    assert res.exit_code == 1 and "--padding takes comma-separated numbers" in res.output
    res = runner.invoke(app, ["augment", str(train), str(test), "--padding", "0.1", "--out", str(tmp_path),
                              "--format", "csv"], env={"COLUMNS": "200"})
    assert res.exit_code == 1 and "'csv' is not one of 'auto', 'tsv', 'ts'" in res.output  # a parser choice
    assert not any(tmp_path.iterdir())  # nothing written on a refused option


def test_unequal_train_test_lengths_are_refused():
    a = SeriesPair(np.zeros((2, 1, 5)), np.array(["a", "b"]), np.zeros((1, 1, 5)), np.array(["a"]))
    assert augment_pair(a, 0.4, seed=0).data.length == 7
    with pytest.raises(SibscanError, match="fraction of the series length"):
        augment_pair(a, -0.1)

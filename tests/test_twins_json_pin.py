"""``sibscan twins`` prints the same bytes as before its JSON was built from arrays (issue 31).

``tests/data/twins_output_cdfe6a1.json`` holds what revision cdfe6a1 printed for each case below
(``dataclasses.asdict`` + the indented ``json.dumps``), made before the change and never edited by
hand; the cases cover every field: labels and their conflicts, duplicates within each split, a
rounding sweep, predictions, z-normalisation, a split without labels, text (no table-only fields),
no twins at all, and the human summary.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from sibscan.cli import app

GOLDEN = Path(__file__).parent / "data" / "twins_output_cdfe6a1.json"
CASES = ("labels", "summary", "sweep_predictions", "znorm", "npy_no_labels", "no_twins", "text")


def _write_ucr(path: Path, values: np.ndarray, labels) -> Path:
    path.write_text("".join("\t".join([str(y)] + [repr(float(v)) for v in row]) + "\n"
                            for y, row in zip(labels, values)))
    return path


def case_args(tmp_path: Path) -> dict:
    """Each case's ``sibscan twins`` arguments, its input files written under ``tmp_path`` (seeded)."""
    rng = np.random.default_rng(31)
    tr = np.round(rng.standard_normal((300, 7)), 3)
    te = np.round(rng.standard_normal((200, 7)), 3)
    ytr = rng.integers(1, 4, len(tr))
    yte = rng.integers(1, 4, len(te))
    te[:40] = tr[rng.integers(0, len(tr), 40)]  # twins, some of one train row, labels as they fall
    te[120:200] = tr[200:280]  # index lists past dumps_json's one-piece length
    te[40:45] = tr[50:55] * 2.0 + 1.0  # rescaled: twins under --znorm only
    te[45:48] = tr[60:63] + 4e-7  # noise that 6 decimals absorb and 10 do not
    tr[100:110] = tr[110:120]  # duplicates within train
    te[90:95] = te[95:100]  # duplicates within test
    tr[7, 2] = te[7, 2] = np.nan
    a, b = _write_ucr(tmp_path / "A_TRAIN.tsv", tr, ytr), _write_ucr(tmp_path / "A_TEST.tsv", te, yte)
    preds = yte.copy()
    preds[rng.choice(len(te), 30, replace=False)] = 9
    (tmp_path / "pred.txt").write_text("\n".join(map(str, preds)) + "\n")
    np.save(tmp_path / "a.npy", tr)
    np.save(tmp_path / "b.npy", te)
    np.save(tmp_path / "c.npy", rng.standard_normal((30, 7)))
    words = [f"line {i} of {'red' if i % 3 else 'blue'} text" for i in range(60)]
    (tmp_path / "tr.txt").write_text("\n".join(words) + "\n")
    (tmp_path / "te.txt").write_text("\n".join(words[::4] + [w.upper() + "  " for w in words[1:9]]
                                               + ["new words here", "and more"]) + "\n")
    return {
        "labels": ["twins", str(a), str(b), "--json"],
        "summary": ["twins", str(a), str(b)],
        "sweep_predictions": ["twins", str(a), str(b), "--json", "--decimals", "2,4,6,10",
                              "--predictions", str(tmp_path / "pred.txt")],
        "znorm": ["twins", str(a), str(b), "--json", "--znorm", "--decimals", "4"],
        "npy_no_labels": ["twins", str(tmp_path / "a.npy"), str(tmp_path / "b.npy"), "--json"],
        "no_twins": ["twins", str(tmp_path / "a.npy"), str(tmp_path / "c.npy"), "--json"],
        "text": ["twins", str(tmp_path / "tr.txt"), str(tmp_path / "te.txt"), "--json"],
    }


def run_cases(tmp_path: Path) -> dict:
    """Each case's standard output."""
    runner = CliRunner()
    out = {}
    for name, args in case_args(tmp_path).items():
        result = runner.invoke(app, args)
        assert result.exit_code == 0, (name, result.output)
        out[name] = result.stdout
    assert tuple(out) == CASES
    return out


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    return run_cases(tmp_path_factory.mktemp("twins_pin"))


@pytest.mark.parametrize("name", CASES)
def test_twins_output_is_byte_identical(outputs, name):
    assert outputs[name] == json.loads(GOLDEN.read_text())[name]


if __name__ == "__main__":  # regenerate (only when the output is meant to change): python tests/test_twins_json_pin.py
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        GOLDEN.write_text(json.dumps(run_cases(Path(tmp)), indent=1, ensure_ascii=False) + "\n")

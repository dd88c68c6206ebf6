"""The reliability suite's shared fixture: a small pair of table files (helpers: ``rel_helpers``)."""
from __future__ import annotations

import numpy as np
import pytest

from rel_helpers import write_table


@pytest.fixture
def tables(tmp_path):
    """40 train rows and 12 test rows (6 exact copies of train rows) of width 8, with labels."""
    rng = np.random.default_rng(0)
    train = rng.normal(size=(40, 8)).cumsum(axis=1)
    test = np.vstack([train[:6], rng.normal(size=(6, 8)).cumsum(axis=1)])
    write_table(tmp_path / "train.csv", train, rng.integers(0, 2, 40))
    write_table(tmp_path / "test.csv", test, rng.integers(0, 2, 12))
    return tmp_path

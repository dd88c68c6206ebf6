"""The items of one split: the unit every stage of sibscan passes along.

An :class:`Items` holds one split (``"train"`` or ``"test"``) of one modality:

* ``"table"`` — numeric rows (tables and time series). ``values`` is a float64 array of shape
  ``(n, d)``; NaN marks missing values and the padding of variable-length rows. Multivariate
  series are stored flattened, dimension after dimension, with ``shape = (n_dims, length)``.
* ``"text"`` — ``texts``, a list of ``n`` strings.
* ``"image"`` — ``paths``, a list of ``n`` absolute file paths (decoded lazily by the loaders).

Every item has a stable ``id`` (str), an optional ``label`` (str) and an optional ``group``
(str: patient, user, page, recording…).  Items that could not be read are not in the arrays; they
are listed in ``skipped`` with their path/row and the reason.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from .errors import InputError

__all__ = ["Items", "Skipped", "MODALITIES", "SPLITS", "check_pair"]

MODALITIES = ("table", "text", "image")
SPLITS = ("train", "test")


@dataclass(frozen=True)
class Skipped:
    """An item left out of a split, with where it was and why."""

    where: str
    reason: str

    def to_dict(self) -> dict:
        return {"where": self.where, "reason": self.reason}


@dataclass
class Items:
    """One split of one modality. See the module docstring for the fields."""

    split: str
    modality: str
    ids: np.ndarray
    labels: Optional[np.ndarray] = None
    groups: Optional[np.ndarray] = None
    values: Optional[np.ndarray] = None
    texts: Optional[list] = None
    paths: Optional[list] = None
    shape: Optional[tuple] = None
    source: str = ""
    skipped: list = field(default_factory=list)
    #: extra per-item info, e.g. for text chunks: ``{"doc_id": ndarray, "chunk": ndarray}``
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.modality not in MODALITIES:
            raise ValueError(f"unknown modality {self.modality!r}; available: {', '.join(MODALITIES)}")
        self.ids = np.asarray(self.ids).astype(str)
        n = len(self.ids)
        for name in ("labels", "groups"):
            arr = getattr(self, name)
            if arr is not None:
                arr = np.asarray(arr).astype(str)
                if len(arr) != n:
                    raise ValueError(f"{name} has {len(arr)} entries for {n} items")
                setattr(self, name, arr)
        content = self.content
        if content is None:
            raise ValueError(f"{self.modality} items need their content field")
        if len(content) != n:
            raise ValueError(f"content has {len(content)} entries for {n} items")

    @property
    def content(self):
        """The modality's content: ``values``, ``texts`` or ``paths``."""
        return {"table": self.values, "text": self.texts, "image": self.paths}[self.modality]

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def has_labels(self) -> bool:
        return self.labels is not None

    def check_unique_ids(self) -> None:
        """Raise :class:`InputError` naming the first duplicated id."""
        uniq, first, counts = np.unique(self.ids, return_index=True, return_counts=True)
        if (counts > 1).any():
            dup = str(uniq[counts > 1][0])
            rows = np.flatnonzero(self.ids == dup)[:2]
            raise InputError(
                f"duplicate id {dup!r} (rows {rows[0]} and {rows[1]}); ids must be unique within a split",
                path=self.source or self.split,
            )

    def subset(self, index: Sequence[int] | np.ndarray) -> "Items":
        """A new :class:`Items` holding the rows ``index`` (in that order)."""
        index = np.asarray(index, dtype=np.int64)
        pick = lambda a: None if a is None else a[index]  # noqa: E731
        pick_list = lambda a: None if a is None else [a[i] for i in index]  # noqa: E731
        return Items(
            split=self.split,
            modality=self.modality,
            ids=self.ids[index],
            labels=pick(self.labels),
            groups=pick(self.groups),
            values=pick(self.values),
            texts=pick_list(self.texts),
            paths=pick_list(self.paths),
            shape=self.shape,
            source=self.source,
            skipped=list(self.skipped),
            extra={k: np.asarray(v)[index] for k, v in self.extra.items()},
        )


def check_pair(train: Items, test: Items) -> None:
    """Refuse a train/test pair that cannot be compared: other modalities, or tables of other widths."""
    from .errors import SibscanError

    if train.modality != test.modality:
        raise SibscanError(
            f"train is {train.modality} ({train.source or 'train'}) but test is {test.modality} "
            f"({test.source or 'test'}); both splits must be of one modality (pass --modality to force how they are read)"
        )
    if train.modality == "table" and train.values.shape[1] != test.values.shape[1]:
        raise InputError(
            f"test rows have {test.values.shape[1]} values but train rows ({train.source or 'train'}) have "
            f"{train.values.shape[1]}; both splits must have the same columns / series length",
            path=test.source or "test",
        )

"""The items of one split: the unit every stage of sibscan passes along.

An :class:`Items` holds one split (``"train"`` or ``"test"``) of one modality:

* ``"table"`` — numeric rows (tables and time series). ``values`` is a float64 array of shape
  ``(n, d)`` (a scan reads its train values from disk once fingerprinted: a
  :class:`~sibscan.store.diskarray.NpyArray`, indexed the same way); NaN marks missing values and the padding of
  variable-length rows. Multivariate
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

from .errors import InputError, SibscanError
from .rowids import RowNumberIds

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


def skipped_note(skipped: dict, listed: str, shown: int = 5) -> str:
    """The line a command prints about items left out: counts per split and the first reasons.

    Parameters
    ----------
    skipped : dict of split -> list of {"where", "reason"}
        As a manifest's ``skipped``.
    listed : str
        Where all of them are ("manifest.json", "--json").

    Returns
    -------
    str
        ``""`` when nothing was skipped.
    """
    every = [k for split in ("train", "test") for k in skipped.get(split) or []]
    if not every:
        return ""
    counts = ", ".join(f"{len(skipped.get(split) or [])} {split}" for split in ("train", "test"))
    more = f" … (all {len(every)} in {listed})" if len(every) > shown else f" (listed in {listed})"
    return (f"skipped (not compared): {counts} — " + "; ".join(f"{k['where']}: {k['reason']}" for k in every[:shown])
            + more)


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
        if not isinstance(self.ids, RowNumberIds):  # row numbers stay unmade (sibscan.rowids)
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
    def width(self) -> int:
        """Values per row of a table (0 for text and images)."""
        return int(self.values.shape[1]) if self.modality == "table" else 0

    @property
    def has_labels(self) -> bool:
        return self.labels is not None

    def check_unique_ids(self) -> None:
        """Raise :class:`InputError` naming the first duplicated id."""
        if isinstance(self.ids, RowNumberIds):  # distinct by construction; checking made every string (~340 B a row)
            return
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

    @classmethod
    def coerce(cls, data, split: str, what: Optional[str] = None) -> "Items":
        """In-memory data as one split: Items as they are, a list of strings as text, numbers as table rows.

        Parameters
        ----------
        data : Items, list of str, or array-like of shape (n,), (n, d) or (n, ...)
            A 1-D array is one value per item; more than two dimensions are flattened per item.
        split : {"train", "test"}
        what : str, optional
            What messages call the data (default ``split``; ``"test_features"`` for vectors).

        Returns
        -------
        Items
            Ids are the positions ``"0" .. "n-1"``.  (A file path is loaded by
            :func:`sibscan.loaders.as_items`, which calls this for everything else.)

        Raises
        ------
        SibscanError
            Data that is not numeric, or has no items (an empty split is refused here, before any work).
        """
        if isinstance(data, Items):
            return data
        what = what or split
        if isinstance(data, (list, tuple)) and data and all(isinstance(x, str) for x in data):
            return cls(split, "text", ids=np.arange(len(data)).astype(str), texts=list(data), source=f"{split} texts")
        arr = np.asarray(data)
        if arr.dtype.kind not in "biuf" or arr.ndim == 0:
            raise SibscanError(f"{what}: expected Items, a list of strings or a numeric array of shape (n, d), "
                               f"got {type(data).__name__} of dtype {arr.dtype} and shape {arr.shape}")
        if len(arr) == 0:
            raise InputError(f"no items (an array of shape {arr.shape}); a split needs at least one item", path=what)
        arr = arr.reshape(len(arr), -1) if arr.ndim != 1 else arr[:, None]
        return cls(split, "table", ids=np.arange(len(arr)).astype(str), values=arr.astype(np.float64),
                   source=f"{split} array")

    def concat(self, other: "Items", into: str = "the items") -> "Items":
        """These items followed by ``other``'s (same modality and table width; ids must not collide).

        ``into`` names these items in messages ("the index").
        """
        if self.modality != other.modality:
            raise SibscanError(f"cannot add {other.modality} items to {into} of {self.modality} items")
        if self.modality == "table" and self.values.shape[1] != other.values.shape[1]:
            raise SibscanError(f"{other.source}: rows have {other.values.shape[1]} values but {into} has "
                               f"{self.values.shape[1]}")
        clash = np.intersect1d(self.ids, other.ids)
        if len(clash):
            raise SibscanError(f"{other.source}: {len(clash)} ids already in {into} (first: {str(clash[0])!r}); "
                               "give the new items an id column with other ids (--id COLUMN)")

        def cat(x, y):
            if x is None and y is None:
                return None
            if x is None or y is None:
                raise SibscanError(f"{other.source}: labels/groups must be given for both {into} and the new items, "
                                   "or neither")
            return np.concatenate([x, y])

        def cat_list(x, y):
            return None if x is None else list(x) + list(y)

        extra = {k: np.concatenate([self.extra[k], other.extra[k]]) for k in self.extra if k in other.extra}
        return Items(
            split=self.split, modality=self.modality, ids=np.concatenate([self.ids, other.ids]),
            labels=cat(self.labels, other.labels), groups=cat(self.groups, other.groups),
            values=None if self.values is None else np.concatenate([self.values, other.values]),
            texts=cat_list(self.texts, other.texts), paths=cat_list(self.paths, other.paths), shape=self.shape,
            source=self.source, skipped=list(self.skipped) + list(other.skipped), extra=extra,
        )


def check_pair(train: Items, test: Items) -> None:
    """Refuse a train/test pair that cannot be compared: other modalities, or tables of other widths.

    Anything with ``modality``, ``width`` and ``source`` is accepted (``SplitPrints`` too)."""
    if train.modality != test.modality:
        raise SibscanError(
            f"train is {train.modality} ({train.source or 'train'}) but test is {test.modality} "
            f"({test.source or 'test'}); both splits must be of one modality (pass --modality to force how they are "
            "read)"
        )
    if train.modality == "table" and train.width != test.width:
        raise InputError(
            f"test rows have {test.width} values but train rows ({train.source or 'train'}) have "
            f"{train.width}; both splits must have the same columns / series length",
            path=test.source or "test",
        )

"""Loading train and test sources into :class:`~sibscan.items.Items`, with modality detection.

``load(source, split)`` picks the modality from the source:

* a directory -> ``image`` (class sub-folders give labels);
* ``.txt`` / ``.jsonl`` -> ``text``;
* ``.csv`` / ``.tsv`` / ``.parquet``: ``text_field`` given -> ``text``, ``path_field`` given (or a CSV/TSV
  whose path column's first row is an image file) -> ``image``, otherwise ``table`` (numeric columns);
* ``.ts`` / ``.arff`` / ``.npy`` / ``.npz`` -> ``table``.

``modality=`` overrides the guess.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from ..errors import InputError, SibscanError
from ..items import MODALITIES, SPLITS, Items
from ..options import LoadOptions
from .text import load_text

__all__ = ["as_items", "check_readable", "load", "load_split", "modality_of"]

_TEXT_SUFFIXES = (".txt", ".jsonl")
_COLUMN_SUFFIXES = (".csv", ".tsv", ".parquet", ".pq")
_TABLE_ONLY = (".ts", ".arff", ".npy", ".npz")


def modality_of(
    source: str | os.PathLike,
    *,
    modality: Optional[str] = None,
    text_field: Optional[str] = None,
    path_field: Optional[str] = None,
) -> str:
    """The modality that :func:`load` will use for ``source``.

    Returns
    -------
    str
        ``"table"``, ``"text"`` or ``"image"``.

    Raises
    ------
    SibscanError
        Unknown ``modality``, both ``text_field`` and ``path_field``, or a suffix sibscan cannot read.
    """
    if modality is not None:
        if modality not in MODALITIES:
            raise SibscanError(f"unknown modality {modality!r}; available: {', '.join(MODALITIES)}")
        return modality
    if text_field is not None and path_field is not None:
        raise SibscanError("give either --text-field or --path-field, not both")
    path = Path(source)
    if path.is_dir():
        return "image"
    suffix = path.suffix.lower()
    if suffix in _TEXT_SUFFIXES:
        return "text"
    if suffix in _COLUMN_SUFFIXES:
        if text_field is not None:
            return "text"
        from .images import is_image_listing

        return "image" if path_field is not None or is_image_listing(path) else "table"
    if suffix in _TABLE_ONLY:
        return "table"
    raise InputError(
        f"cannot tell the modality from {suffix or 'a name without suffix'!r}: expected a folder of images, "
        f"{', '.join(_TEXT_SUFFIXES + _COLUMN_SUFFIXES + _TABLE_ONLY)}; or set --modality",
        path=path,
    )


def load(
    source: str | os.PathLike,
    split: str,
    *,
    modality: Optional[str] = None,
    label: Optional[str] = None,
    id: Optional[str] = None,  # noqa: A002 - matches the CLI option name
    group: Optional[str] = None,
    text_field: Optional[str] = None,
    path_field: Optional[str] = None,
    labels_path: Optional[str | os.PathLike] = None,
    chunk_words: Optional[int] = None,
    chunk_stride: Optional[int] = None,
    sink=None,
) -> Items:
    """Load one split from a file or folder.

    Parameters
    ----------
    source : path
        File or folder (see the module docstring for how the modality is chosen).
    split : {"train", "test"}
    modality : {"table", "text", "image"}, optional
        Overrides the guess.
    label, id, group : str, optional
        Column (or field) names of the label, item id and group.
    text_field, path_field : str, optional
        The text column (text) or the image-path column (images) of a CSV/TSV/Parquet/JSONL file.
    labels_path : path, optional
        Labels of ``.npy``/``.npz`` input (one per row).
    chunk_words, chunk_stride : int, optional
        Split long texts into overlapping chunks of this many words (text only).
    sink : optional
        A CSV/TSV table's values go there as they are parsed (see
        :func:`sibscan.loaders.tables.load_table`); ignored by every other format.

    Returns
    -------
    Items
    """
    if split not in SPLITS:
        raise SibscanError(f"unknown split {split!r}; available: {', '.join(SPLITS)}")
    path = Path(source)
    if not path.exists():
        raise InputError("file not found", path=path)
    check_readable(path)
    kind = modality_of(path, modality=modality, text_field=text_field, path_field=path_field)
    if labels_path is not None and kind != "table":
        raise SibscanError("--labels-train/--labels-test are for .npy/.npz tables; text and images take --label")
    if kind != "text" and (chunk_words is not None or chunk_stride is not None):
        raise SibscanError("--chunk-words/--chunk-stride apply to text only")
    if kind == "table":
        from .tables import load_table

        return load_table(path, split, label=label, id=id, group=group, labels_path=labels_path, sink=sink)
    if kind == "text":
        return load_text(path, split, text_field=text_field, label=label, id=id, group=group,
                         chunk_words=chunk_words, chunk_stride=chunk_stride)
    from .images import load_images

    return load_images(path, split, label=label, id=id, group=group, path_field=path_field)


def check_readable(path: Path) -> None:
    """Refuse an input that cannot be read (permissions) with one line, before any parsing."""
    try:
        if path.is_dir():
            with os.scandir(path):
                pass
        else:  # non-blocking: opening a FIFO for reading must not wait for a writer
            os.close(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)))
    except OSError as exc:
        raise InputError(f"cannot read ({exc.strerror}); check its permissions", path=path) from None


def as_items(data, split: str) -> Items:
    """``data`` as one split: a file or folder path is loaded with :func:`load` (modality detected);
    in-memory data (Items, texts, arrays, DataFrames, datasets…) is read by
    :func:`sibscan.loaders.memory.from_memory` (images held in memory need :func:`load_split`'s folder)."""
    if isinstance(data, (str, os.PathLike)):
        return load(data, split)
    from .memory import from_memory

    return from_memory(data, split)


def load_split(options: LoadOptions, split: str, *, image_dir: Optional[str | os.PathLike] = None,
               sink=None) -> Items:
    """One split of a scan: ``options.train`` or ``options.test``, read with the options' columns.

    The source is a path, or (from Python) in-memory data read by
    :func:`sibscan.loaders.memory.from_memory`; images held in memory are written to ``image_dir``.
    A CSV/TSV table's values go to ``sink`` as they are parsed (see :func:`load`).

    Raises
    ------
    SibscanError
        No source given for the split, no usable item in it, or an id twice.
    """
    source = options.train if split == "train" else options.test
    if source is None:
        raise SibscanError(f"no {split} data given; pass --{split} PATH")
    if isinstance(source, (str, os.PathLike)):
        items = load(source, split, sink=sink, **options.load_kwargs(split))
    else:
        from .memory import from_memory

        kwargs = options.load_kwargs(split)
        if kwargs.pop("labels_path") is not None:
            raise SibscanError("--labels-train/--labels-test are for .npy files; in-memory data brings its labels "
                               "(a label column)")
        items = from_memory(source, split, image_dir=image_dir, **kwargs)
        source = items.source
    if len(items) == 0:
        raise InputError(f"the {split} split has no usable items ({len(items.skipped)} skipped)", path=source)
    items.check_unique_ids()
    return items

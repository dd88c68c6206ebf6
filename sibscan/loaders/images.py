"""Load image items from a folder or a listing, decode each once, and fingerprint them exactly.

A folder is walked recursively; when every image lies in a sub-folder, the first-level sub-folder
names are the labels (as torchvision's ``ImageFolder``) and ids are the paths relative to the
folder.  A listing (CSV/TSV, JSONL or Parquet) names one image per row, relative to the listing's
own folder, with optional label/id/group columns.

Every image is decoded once (:func:`sibscan.imageio.decode_images`, a thread pool) and fingerprinted
while it is decoded (:mod:`sibscan.fingerprint`).  Unreadable, zero-byte, corrupt or oversized images are left out
and listed in ``items.skipped``, and so is everything of a folder that was not scanned: sub-folders
that cannot be read, dangling links, FIFOs and folders named like images, links to folders (not
followed).  ``items.extra`` gets

* ``"pixel_fp"`` — (n, 2) uint64, a 128-bit hash of the decoded RGB pixels and the size: the same
  picture saved again with other metadata (or losslessly in another format) keeps its fingerprint;
* ``"bytes_fp"`` — (n, 2) uint64, a 128-bit hash of the file's bytes;
* ``"width"``, ``"height"`` — (n,) int64.
"""
from __future__ import annotations

import csv
import logging
import os
import warnings
from pathlib import Path
from typing import List, Optional, Sequence, Tuple, Union

import numpy as np

from ..errors import InputError
from ..fingerprint import file_fingerprint, pixel_fingerprint
from ..imageio import IMAGE_EXTENSIONS, decode_images
from ..items import Items, Skipped
from .records import column, id_column, label_field, read_columns

__all__ = ["LISTING_EXTENSIONS", "PATH_FIELDS", "image_items", "load_images"]

log = logging.getLogger(__name__)

LISTING_EXTENSIONS = (".csv", ".tsv", ".jsonl", ".ndjson", ".parquet")
#: column names tried, in order, for the image path of a listing when ``path_field`` is not given
PATH_FIELDS = ("path", "file", "filename", "image", "image_path", "filepath")

def _reason(exc: InputError) -> str:
    """The message of an :class:`InputError` without its ``"<path>: "`` prefix."""
    text = str(exc)
    prefix = f"{exc.path}: "
    return text[len(prefix):] if exc.path is not None and text.startswith(prefix) else text


def _fingerprint_one(image, path: str):
    return pixel_fingerprint(image), file_fingerprint(path), image.size


def _scan_folder(root: Path) -> Tuple[List[Path], List[str], Optional[List[str]], List[Skipped]]:
    """Image files under ``root`` (recursively, links to files followed, links to folders not), and
    what was left out: unreadable folders, and names with an image suffix that are not image files
    (dangling links, FIFOs, folders named ``*.png``, links to folders)."""
    files: List[Path] = []
    skipped: List[Skipped] = []

    def unreadable(exc: OSError) -> None:
        skipped.append(Skipped(where=str(exc.filename), reason=f"cannot read folder ({exc.strerror}); "
                               "the images inside were not scanned"))

    for folder, dirs, names in os.walk(root, onerror=unreadable):
        base = Path(folder)
        for name in sorted(dirs):
            p = base / name
            if p.is_symlink():
                skipped.append(Skipped(where=str(p), reason="symbolic link to a folder, not followed"))
            elif p.suffix.lower() in IMAGE_EXTENSIONS:
                skipped.append(Skipped(where=str(p), reason="a folder named like an image, not an image file "
                                                            "(images inside it are scanned)"))
        for name in names:
            p = base / name
            if p.suffix.lower() not in IMAGE_EXTENSIONS:
                continue
            if p.is_file():
                files.append(p)
            elif p.is_symlink() and not p.exists():
                skipped.append(Skipped(where=str(p), reason="dangling symbolic link"))
            else:
                kind = "a FIFO" if p.is_fifo() else "a folder" if p.is_dir() else "a special file"
                skipped.append(Skipped(where=str(p), reason=f"not an image file but {kind}"))
    files.sort()
    rel = [p.relative_to(root).as_posix() for p in files]
    in_sub = [("/" in r) for r in rel]
    labels: Optional[List[str]] = None
    if files and all(in_sub):
        labels = [r.split("/", 1)[0] for r in rel]
    elif any(in_sub):
        warnings.warn(
            f"{root}: some images lie directly in the folder and some in sub-folders; "
            "no labels taken from sub-folder names",
            stacklevel=3,
        )
    return files, rel, labels, sorted(skipped, key=lambda k: k.where)


def _numeric(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def is_image_listing(path: Path) -> bool:
    """Whether a CSV/TSV names a path column (:data:`PATH_FIELDS`) whose first row is an existing image file,
    relative to the listing's folder: such a file is an image listing without ``--path-field``.

    Not when two or more of its other columns are numbers in that row: that is a table of features that
    names its images (``filename,f1,f2,…``), read as a table as before (``--path-field`` makes it a
    listing)."""
    if path.suffix.lower() not in (".csv", ".tsv") or not path.is_file():
        return False
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh, delimiter="\t" if path.suffix.lower() == ".tsv" else ",")
            header = [h.strip() for h in next(reader, [])]
            first = next(reader, [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return False  # not one: the table reader then says what is wrong with the file
    col = next((header.index(f) for f in PATH_FIELDS if f in header), None)
    if col is None or col >= len(first) or not first[col].strip():
        return False
    image = path.parent / first[col].strip()
    if not (image.suffix.lower() in IMAGE_EXTENSIONS and image.is_file()):
        return False
    return sum(_numeric(c.strip()) for i, c in enumerate(first) if i != col) < 2


def _scan_listing(path: Path, label, id_field, group, path_field):
    names, columns, lines = read_columns(path)
    if path_field is None:
        path_field = next((f for f in PATH_FIELDS if f in columns), None)
        if path_field is None:
            raise InputError(
                f"no image path column (tried {', '.join(PATH_FIELDS)}); columns: {', '.join(names)} "
                "(choose one with --path-field)",
                path=path,
            )
    raw = column(columns, names, path_field, "path", path)
    ids = id_column(columns, names, id_field, path, lines)
    if label is None:  # a column named like a label is one, as in a table (--label names another)
        label = label_field(names, (path_field, id_field, group))
    labels = column(columns, names, label, "label", path)
    groups = column(columns, names, group, "group", path)
    base = path.parent
    files = [None if not p else (base / str(p)).resolve() for p in raw]
    ids = ids if ids is not None else [("" if p is None else str(p)) for p in raw]
    return files, ids, labels, groups, lines


def load_images(
    source: Union[str, os.PathLike],
    split: str,
    *,
    label: Optional[str] = None,
    id: Optional[str] = None,  # noqa: A002 - mirrors the CLI option --id
    group: Optional[str] = None,
    path_field: Optional[str] = None,
    workers: Optional[int] = None,
) -> Items:
    """Load one split of images from a folder or a listing file.

    Parameters
    ----------
    source : str or path
        A folder (walked recursively) or a ``.csv``/``.tsv``/``.jsonl``/``.parquet`` listing.
    split : {"train", "test"}
    label, id, group : str, optional
        Listing columns with each image's label, id and group (a folder's labels come from its
        sub-folders; its ids are the relative paths).
    path_field : str, optional
        Listing column with the image path; default the first of :data:`PATH_FIELDS` present.
    workers : int, optional
        Decoding threads.

    Returns
    -------
    Items
        ``modality="image"``, ``paths`` absolute, ``extra`` with ``pixel_fp``/``bytes_fp`` (n, 2)
        uint64 and ``width``/``height`` (n,) int64.

    Raises
    ------
    InputError
        A missing source, a listing without the named columns, duplicate ids, or no readable image.
    """
    src = Path(source)
    if src.is_dir():
        if any(f is not None for f in (label, id, group, path_field)):
            raise InputError(
                "label/id/group/path columns apply to listing files; a folder's labels come from its sub-folders",
                path=src,
            )
        files, ids, labels, walk_skipped = _scan_folder(src)
        groups, lines = None, []
        if not files:
            first = f"; left out: {walk_skipped[0].where}: {walk_skipped[0].reason}" if walk_skipped else ""
            raise InputError(f"no images found (looked for {', '.join(IMAGE_EXTENSIONS)}, recursively){first}",
                             path=src)
    elif src.is_file():
        if src.suffix.lower() not in LISTING_EXTENSIONS:
            raise InputError(
                f"not a folder or an image listing ({', '.join(LISTING_EXTENSIONS)}); got {src.suffix!r}", path=src
            )
        files, ids, labels, groups, lines = _scan_listing(src, label, id, group, path_field)
        walk_skipped = []
    else:
        raise InputError("no such file or folder", path=src)

    return image_items(files, split, ids=ids, labels=labels, groups=groups, source=str(src), workers=workers,
                       lines=lines or None, skipped=walk_skipped)


def image_items(
    files: List[Optional[Union[str, os.PathLike]]],
    split: str,
    *,
    ids: Sequence,
    labels: Optional[Sequence] = None,
    groups: Optional[Sequence] = None,
    source: str = "",
    workers: Optional[int] = None,
    lines: Optional[Sequence[int]] = None,
    skipped: Optional[Sequence[Skipped]] = None,
) -> Items:
    """Decode and fingerprint image ``files`` (None = an empty path) into image :class:`Items`.

    The one place where image items are made, for a folder, a listing and in-memory images
    (:mod:`sibscan.loaders.memory`) alike: unreadable files are left out and listed in
    ``skipped``; ``ids``, ``labels``, ``groups`` have one entry per file. ``lines`` names each
    file's row in its listing (the file's line number; default the 0-based position) and
    ``skipped`` holds entries already left out (a folder walk's).
    """
    src = source
    skipped = list(skipped or [])
    present = [i for i, f in enumerate(files) if f is not None]
    skipped.extend(Skipped(where=f"{src}, row {lines[i] if lines is not None else i}", reason="empty image path")
                   for i, f in enumerate(files) if f is None)
    results = decode_images([files[i] for i in present], _fingerprint_one, workers=workers, desc=f"read {split} images",
                            transient=False)
    keep: List[int] = []
    fps, bfps, sizes = [], [], []
    for i, res in zip(present, results):
        if isinstance(res, InputError):
            skipped.append(Skipped(where=str(files[i]), reason=_reason(res)))
            continue
        keep.append(i)
        fps.append(res[0])
        bfps.append(res[1])
        sizes.append(res[2])
    if skipped:
        log.info("%s: %d image(s) skipped", src, len(skipped))
    if not keep:
        first = f"; first: {skipped[0].where}: {skipped[0].reason}" if skipped else ""
        raise InputError(f"no readable images ({len(skipped)} skipped{first})", path=src)
    pick = lambda col: None if col is None else np.asarray(["" if col[i] is None else str(col[i]) for i in keep])  # noqa: E731
    size_arr = np.asarray(sizes, dtype=np.int64).reshape(-1, 2)
    items = Items(
        split=split,
        modality="image",
        ids=pick(ids),
        labels=pick(labels),
        groups=pick(groups),
        paths=[str(Path(files[i]).resolve()) for i in keep],
        source=str(src),
        skipped=skipped,
        extra={
            "pixel_fp": np.asarray(fps, dtype=np.uint64).reshape(-1, 2),
            "bytes_fp": np.asarray(bfps, dtype=np.uint64).reshape(-1, 2),
            "width": size_arr[:, 0],
            "height": size_arr[:, 1],
        },
    )
    items.check_unique_ids()
    return items

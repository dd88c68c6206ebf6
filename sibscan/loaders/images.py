"""Load image items from a folder or a listing, decode each once, and fingerprint them exactly.

A folder is walked recursively; when every image lies in a sub-folder, the first-level sub-folder
names are the labels (as torchvision's ``ImageFolder``) and ids are the paths relative to the
folder.  A listing (CSV/TSV, JSONL or Parquet) names one image per row, relative to the listing's
own folder, with optional label/id/group columns.

Every image is decoded once with :func:`sibscan.imageio.open_image` in a thread pool (Pillow
releases the GIL while decoding).  Unreadable, zero-byte, corrupt or oversized images are left out
and listed in ``items.skipped``.  ``items.extra`` gets

* ``"pixel_fp"`` — (n, 2) uint64, a 128-bit hash of the decoded RGB pixels and the size: the same
  picture saved again with other metadata (or losslessly in another format) keeps its fingerprint;
* ``"bytes_fp"`` — (n, 2) uint64, a 128-bit hash of the file's bytes;
* ``"width"``, ``"height"`` — (n,) int64.
"""
from __future__ import annotations

import hashlib
import logging
import os
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable, List, Optional, Sequence, Tuple, TypeVar, Union

import numpy as np

from ..errors import InputError
from ..imageio import IMAGE_EXTENSIONS, open_image
from ..items import Items, Skipped

__all__ = ["LISTING_EXTENSIONS", "PATH_FIELDS", "decode_images", "image_fingerprints", "load_images", "pixel_fingerprint"]

log = logging.getLogger(__name__)

LISTING_EXTENSIONS = (".csv", ".tsv", ".jsonl", ".ndjson", ".parquet")
#: column names tried, in order, for the image path of a listing when ``path_field`` is not given
PATH_FIELDS = ("path", "file", "filename", "image", "image_path", "filepath")

T = TypeVar("T")


def default_workers() -> int:
    return max(1, min(8, (os.cpu_count() or 1)))


def decode_images(
    paths: Sequence[Union[str, os.PathLike]],
    fn: Callable[[object, str], T],
    *,
    workers: Optional[int] = None,
    desc: str = "decoding images",
) -> List[Union[T, InputError]]:
    """Decode every image with :func:`open_image` in a thread pool and apply ``fn(image, path)``.

    Parameters
    ----------
    paths : sequence of paths, length n
    fn : callable
        Called with the decoded RGB ``PIL.Image.Image`` and its path; runs in the worker thread.
    workers : int, optional
        Threads; default ``min(8, cpu_count)``.
    desc : str
        Progress-bar label (the bar shows on a terminal only).

    Returns
    -------
    list of length n
        ``fn``'s result, or the :class:`InputError` that made the image unreadable.
    """
    from tqdm.auto import tqdm

    def one(path):
        try:
            return fn(open_image(path), str(path))
        except InputError as exc:
            return exc

    workers = workers or default_workers()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        results = pool.map(one, paths)
        return list(tqdm(results, total=len(paths), desc=desc, unit="img", disable=None, leave=False))


def _reason(exc: InputError) -> str:
    """The message of an :class:`InputError` without its ``"<path>: "`` prefix."""
    text = str(exc)
    prefix = f"{exc.path}: "
    return text[len(prefix):] if exc.path is not None and text.startswith(prefix) else text


def pixel_fingerprint(image) -> Tuple[int, int]:
    """128-bit hash of an RGB image's size and pixels, as two 64-bit integers."""
    h = hashlib.blake2b(digest_size=16)
    h.update(np.array(image.size, dtype="<u8").tobytes())
    h.update(image.tobytes())
    lo, hi = np.frombuffer(h.digest(), dtype="<u8")
    return int(lo), int(hi)


def _file_fingerprint(path: str) -> Tuple[int, int]:
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    lo, hi = np.frombuffer(h.digest(), dtype="<u8")
    return int(lo), int(hi)


def _fingerprint_one(image, path: str):
    return pixel_fingerprint(image), _file_fingerprint(path), image.size


def _scan_folder(root: Path) -> Tuple[List[Path], List[str], Optional[List[str]]]:
    files = sorted(
        p for p in root.rglob("*") if p.suffix.lower() in IMAGE_EXTENSIONS and p.is_file()
    )
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
    return files, rel, labels


def _scan_listing(path: Path, label, id_field, group, path_field):
    from .text import _column, _read_records  # one reader for CSV/TSV/JSONL/Parquet

    names, columns = _read_records(path)
    if path_field is None:
        path_field = next((f for f in PATH_FIELDS if f in columns), None)
        if path_field is None:
            raise InputError(
                f"no image path column (tried {', '.join(PATH_FIELDS)}); columns: {', '.join(names)} "
                "(choose one with --path-field)",
                path=path,
            )
    raw = _column(columns, names, path_field, "path", path)
    n = len(raw)
    ids = _column(columns, names, id_field, "id", path)
    labels = _column(columns, names, label, "label", path)
    groups = _column(columns, names, group, "group", path)
    base = path.parent
    files = [None if not p else (base / str(p)).resolve() for p in raw]
    ids = [str(x) for x in ids] if ids is not None else [("" if p is None else str(p)) for p in raw]
    return files, ids, labels, groups, n


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
        files, ids, labels = _scan_folder(src)
        groups = None
        if not files:
            raise InputError(f"no images found (looked for {', '.join(IMAGE_EXTENSIONS)}, recursively)", path=src)
    elif src.is_file():
        if src.suffix.lower() not in LISTING_EXTENSIONS:
            raise InputError(
                f"not a folder or an image listing ({', '.join(LISTING_EXTENSIONS)}); got {src.suffix!r}", path=src
            )
        files, ids, labels, groups, _ = _scan_listing(src, label, id, group, path_field)
    else:
        raise InputError("no such file or folder", path=src)

    skipped: List[Skipped] = []
    present = [i for i, f in enumerate(files) if f is not None]
    skipped.extend(Skipped(where=f"{src}, row {i}", reason="empty image path") for i, f in enumerate(files) if f is None)
    results = decode_images([files[i] for i in present], _fingerprint_one, workers=workers, desc=f"{split} images")
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


def image_fingerprints(items: Items, workers: Optional[int] = None) -> np.ndarray:
    """Exact pixel fingerprints of image items: ``items.extra["pixel_fp"]``, computed if missing.

    Returns
    -------
    ndarray of shape (n, 2), uint64

    Raises
    ------
    InputError
        When an image can no longer be decoded.
    """
    if items.modality != "image":
        raise InputError(f"image fingerprints need image items, got {items.modality}", path=items.source or None)
    fp = items.extra.get("pixel_fp")
    if fp is not None and len(fp) == len(items):
        return np.asarray(fp, dtype=np.uint64)
    results = decode_images(items.paths, lambda im, _p: pixel_fingerprint(im), workers=workers, desc="fingerprints")
    for res in results:
        if isinstance(res, InputError):
            raise res
    fp = np.asarray(results, dtype=np.uint64).reshape(-1, 2)
    items.extra["pixel_fp"] = fp
    return fp

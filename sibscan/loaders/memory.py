"""In-memory data as one split: what the Python API takes besides paths.

:func:`from_memory` reads, by what the object is:

* :class:`~sibscan.items.Items` — as they are;
* a pandas ``DataFrame``, a Hugging Face ``datasets.Dataset`` or a dict of equal-length columns —
  by column names, as a file with the same columns would be read: ``label``/``id``/``group`` name
  those columns (without ``label`` a column called ``label``, ``class``, ``target`` or ``y`` is the
  label, as for tables on disk); the content is ``text_field`` (texts), ``path_field`` (image
  paths), else the one image column (HF ``Image`` feature, or PIL images), else every other column
  when all are numeric (a table; a column of equal-length vectors counts as its values), else a
  ``text`` column;
* a torch ``Dataset`` (torchvision's too) yielding ``(image, label)`` or ``image`` — PIL images,
  ``uint8`` arrays/tensors, or ``[0, 1]`` float tensors as ``ToTensor`` makes them; a dataset's
  ``classes`` name its integer labels, as the folders of an ``ImageFolder`` on disk would;
* a list of PIL images, a list of image paths (``pathlib.Path`` objects, or strings ending in an
  image suffix), a list of texts, a ``uint8`` array of shape (n, H, W, C) (images), or any other
  numeric array (table rows, via :meth:`Items.coerce`).

Images in memory are written once, losslessly, to ``image_dir`` (a scan's ``OUT/inputs/``) under
the hash of their bytes — an HF ``Image`` feature's stored bytes as they are, PIL images as PNG —
and then read back by :func:`sibscan.loaders.images.image_items`, the same code that reads a folder:
the same picture in memory or on disk gets the same fingerprint, embedding and verified score, and
the scan directory, the report's gallery and the labelling page keep working after the process ends.
Ids are row positions ("0", "1", …) unless ``id`` names a column.
"""
from __future__ import annotations

import hashlib
import io
import os
import sys
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional

import numpy as np

from ..atomic import write_bytes
from ..errors import InputError, SibscanError, require
from ..imageio import IMAGE_EXTENSIONS
from ..items import Items, Skipped
from ..progress import bar
from .records import label_field
from .images import image_items
from .rows import build_table_items

__all__ = ["describe", "from_memory", "is_path"]

_PNG_MODES = ("1", "L", "LA", "I", "I;16", "P", "RGB", "RGBA")


def is_path(data: Any) -> bool:
    return isinstance(data, (str, os.PathLike))


def describe(data: Any) -> str:
    """A short name for in-memory data in manifests and messages ("DataFrame of 120 rows")."""
    if isinstance(data, Items):
        return data.source or f"{data.split} items"
    try:
        n = f" of {len(data):,} rows"
    except TypeError:
        n = ""
    return f"in-memory {type(data).__name__}{n}"


def _module(data: Any) -> str:
    return type(data).__module__ or ""


def _is_pil(x: Any) -> bool:
    return _module(x).startswith("PIL.")


def _is_torch_dataset(data: Any) -> bool:
    if "torch" not in sys.modules or not hasattr(data, "__getitem__") or not hasattr(data, "__len__"):
        return False
    import torch

    return isinstance(data, torch.utils.data.Dataset)


def from_memory(data: Any, split: str, *, modality: Optional[str] = None, label: Optional[str] = None,
                id: Optional[str] = None, group: Optional[str] = None,  # noqa: A002 - the option's name
                text_field: Optional[str] = None, path_field: Optional[str] = None,
                image_dir: Optional[str | os.PathLike] = None) -> Items:
    """One split from in-memory ``data`` (see the module docstring for what is accepted).

    Parameters
    ----------
    data : DataFrame, datasets.Dataset, dict of columns, torch Dataset, list or ndarray, Items
        Not a path: :func:`sibscan.loaders.load_split` and :func:`sibscan.loaders.as_items` read paths.
    split : {"train", "test"}
    modality : {"table", "text", "image"}, optional
        Forces how ``data`` is read (e.g. a list of strings that are image paths without a suffix).
    label, id, group, text_field, path_field : str, optional
        Column names, as for files.
    image_dir : path, optional
        Where images held in memory are written (needed only for them).

    Returns
    -------
    Items
    """
    if isinstance(data, Items):
        return data
    if is_path(data):  # a file is read by sibscan.loaders.load (load_split and as_items call it)
        raise SibscanError(f"{split}: {data} is a path; read it with sibscan.load, or pass it to sibscan.scan "
                           "as it is")
    ctx = _Context(split, describe(data), modality, image_dir)
    if _module(data).startswith("pandas") and hasattr(data, "columns"):
        return _from_columns(_dataframe_columns(data), ctx, label, id, group, text_field, path_field)
    if _module(data).startswith("datasets") and hasattr(data, "features"):
        return _from_columns(_hf_columns(data), ctx, label, id, group, text_field, path_field)
    if isinstance(data, dict):
        return _from_columns(_dict_columns(data), ctx, label, id, group, text_field, path_field)
    named = [n for n, v in (("label", label), ("id", id), ("group", group), ("text_field", text_field),
                            ("path_field", path_field)) if v is not None]
    if named:
        raise SibscanError(f"{split}: {', '.join(named)} name columns, but {describe(data)} has none; pass a "
                           "DataFrame, a datasets.Dataset or a dict of columns")
    if _is_torch_dataset(data):
        return _from_torch(data, ctx)
    if isinstance(data, (list, tuple)):
        return _from_list(list(data), ctx)
    if _module(data).startswith(("numpy", "torch")) or hasattr(data, "__array__"):
        arr = np.asarray(data)
        if modality == "image" or (arr.dtype == np.uint8 and arr.ndim == 4 and arr.shape[-1] in (1, 3, 4)):
            return ctx.images((_to_pil(a, f"row {i}", ctx) for i, a in enumerate(arr)), len(arr))
        return ctx.checked(Items.coerce(arr, split))
    raise SibscanError(
        f"{split}: cannot read {type(data).__name__}; pass a path, a pandas DataFrame, a datasets.Dataset, a dict "
        "of columns, a torch Dataset, a list of texts / PIL images / image paths, or a numeric array")


class _Context:
    """What every reader needs: the split, a name for messages, the forced modality, the image folder."""

    def __init__(self, split: str, source: str, modality: Optional[str], image_dir):
        self.split, self.source, self.modality = split, f"{split}: {source}", modality
        self.image_dir = None if image_dir is None else Path(image_dir)

    def checked(self, items: Items) -> Items:
        if self.modality is not None and items.modality != self.modality:
            raise SibscanError(f"{self.source} reads as {items.modality} items, not {self.modality}")
        items.source = self.source
        return items

    def texts(self, texts: List[Any], ids=None, labels=None, groups=None) -> Items:
        """Text items; empty texts are left out and listed, as the text loader does."""
        texts = [None if isinstance(t, float) and np.isnan(t) else t for t in texts]  # a DataFrame's missing cell
        bad = next((i for i, t in enumerate(texts) if t is not None and not isinstance(t, str)), None)
        if bad is not None:
            raise InputError(f"text {bad} is a {type(texts[bad]).__name__}, not a string", path=self.source)
        keep = [i for i, t in enumerate(texts) if t is not None and t.strip()]
        if not keep:
            raise InputError(f"no non-empty texts ({len(texts)} rows)", path=self.source)
        skipped = [Skipped(where=f"{self.source}, row {i}", reason="empty text")
                   for i in sorted(set(range(len(texts))) - set(keep))]
        pick = _picker(keep)
        items = Items(self.split, "text", ids=pick(ids) if ids is not None else np.asarray(keep).astype(str),
                      labels=pick(labels), groups=pick(groups), texts=[texts[i] for i in keep], source=self.source,
                      skipped=skipped)
        items.check_unique_ids()
        return self.checked(items)

    def image_paths(self, paths: List[Any], ids=None, labels=None, groups=None) -> Items:
        files = [None if p is None or str(p) == "" else Path(p).expanduser() for p in paths]
        ids = [str(i) for i in range(len(paths))] if ids is None else ids
        return self.checked(image_items(files, self.split, ids=ids, labels=labels, groups=groups, source=self.source))

    def images(self, images: Iterable[Any], n: int, ids=None, labels=None, groups=None) -> Items:
        """Images held in memory, stored (:meth:`store`), then read like files."""
        return self.image_paths(self.store(images, n), ids=ids, labels=labels, groups=groups)

    def store(self, images: Iterable[Any], n: int) -> List[Optional[str]]:
        """Write images held in memory (PIL images, or ``{"bytes", "path"}`` records of an HF ``Image``
        feature) under ``image_dir``, named by the hash of their bytes; their paths."""
        if self.image_dir is None:
            raise SibscanError(f"{self.source}: images held in memory are written to the scan directory first; "
                               "give an output directory (out=...)")
        self.image_dir.mkdir(parents=True, exist_ok=True)
        files: List[Optional[str]] = []
        with bar(n, f"{self.split}: write in-memory images", "image") as progress:
            for image in images:
                files.append(None if image is None else str(self._store(image)))
                progress.update()
        return files

    def _store(self, image: Any) -> Path:
        if isinstance(image, dict):  # an HF Image feature read with decode=False
            if image.get("bytes"):
                data, suffix = bytes(image["bytes"]), Path(image.get("path") or "").suffix.lower()
            elif image.get("path") and Path(image["path"]).is_file():
                return Path(image["path"])
            else:
                raise InputError(f"an image record holds neither bytes nor a readable path ({image.get('path')!r})",
                                 path=self.source)
        else:
            data, suffix = _png_bytes(image), ".png"
        if suffix not in IMAGE_EXTENSIONS:
            suffix = ".png" if data[:4] == b"\x89PNG" else ".jpg" if data[:2] == b"\xff\xd8" else ".img"
        path = self.image_dir / f"{hashlib.blake2b(data, digest_size=16).hexdigest()}{suffix}"
        if not path.exists():  # named by content: an existing file already holds these bytes
            write_bytes(path, data)
        return path


def _picker(keep: List[int]) -> Callable:
    return lambda col: None if col is None else np.asarray(["" if col[i] is None else str(col[i]) for i in keep])


def _png_bytes(image: Any) -> bytes:
    if image.mode not in _PNG_MODES:  # CMYK, YCbCr, F…: as the decoder of a file would give them
        image = image.convert("RGB")
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


def _to_pil(x: Any, where: str, ctx: _Context):
    """A PIL image from a PIL image, a uint8 array (H, W[, C]) or a tensor (C, H, W) as ToTensor makes it."""
    if _is_pil(x):
        return x
    Image = require("PIL.Image", "images", "reading images")
    from_torch = _module(x).startswith("torch")
    arr = np.asarray(x.detach().cpu() if from_torch else x)
    if from_torch and arr.ndim == 3 and arr.shape[0] in (1, 3, 4):
        arr = np.moveaxis(arr, 0, -1)  # torch's (C, H, W)
    if arr.dtype.kind == "f":
        if arr.size and (np.nanmin(arr) < 0 or np.nanmax(arr) > 1):
            raise InputError(f"{where}: a float image with values outside [0, 1] (normalised?); pass the images "
                             "without Normalize (sibscan compares the pictures themselves)", path=ctx.source)
        arr = np.rint(arr * 255).astype(np.uint8)
    if arr.dtype != np.uint8 or arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[-1] not in (1, 3, 4)):
        raise InputError(f"{where}: expected an image (PIL, uint8 array of shape (H, W[, C]) or a (C, H, W) "
                         f"tensor), got {type(x).__name__} of dtype {arr.dtype} and shape {arr.shape}", path=ctx.source)
    return Image.fromarray(arr[..., 0] if arr.ndim == 3 and arr.shape[-1] == 1 else arr)


def _looks_like_image_path(x: Any) -> bool:
    return isinstance(x, os.PathLike) or (isinstance(x, str) and x.lower().endswith(IMAGE_EXTENSIONS))


def _from_list(data: List[Any], ctx: _Context) -> Items:
    if not data:
        raise InputError("no items (an empty list)", path=ctx.source)
    if ctx.modality == "image" or _is_pil(data[0]) or all(_looks_like_image_path(x) for x in data):
        if all(is_path(x) for x in data):
            return ctx.image_paths(data)
        return ctx.images((_to_pil(x, f"item {i}", ctx) for i, x in enumerate(data)), len(data))
    if all(isinstance(x, str) or x is None for x in data):
        return ctx.texts(data)
    return ctx.checked(Items.coerce(data, ctx.split))


def _from_torch(data: Any, ctx: _Context) -> Items:
    """A torch Dataset yielding (image, label) or image; numbers (1-D) make table rows."""
    n = len(data)
    classes = getattr(data, "classes", None)
    labels: List[Optional[str]] = []

    def name(y: Any) -> str:
        y = y.item() if hasattr(y, "item") else y
        if isinstance(y, (int, np.integer)) and isinstance(classes, (list, tuple)) and 0 <= y < len(classes):
            return str(classes[y])
        return str(y)

    def samples() -> Iterator[Any]:
        for i in range(n):
            sample = data[i]
            if isinstance(sample, (tuple, list)) and len(sample) == 2:
                sample, y = sample
                labels.append(name(y))
            yield sample

    first = data[0] if n else None
    first = first[0] if isinstance(first, (tuple, list)) and len(first) == 2 else first
    if first is not None and not _is_pil(first) and np.asarray(first).ndim == 1 and ctx.modality != "image":
        rows = np.stack([np.asarray(s, dtype=np.float64) for s in samples()])
        items = Items.coerce(rows, ctx.split)
        items.labels = np.asarray(labels) if len(labels) == n else None
        return ctx.checked(items)
    files = ctx.store((_to_pil(s, f"item {i}", ctx) for i, s in enumerate(samples())), n)  # fills labels
    return ctx.image_paths(files, labels=labels if len(labels) == n else None)


# --------------------------------------------------------------------------- column sources
class _Columns:
    """Column data: names, row count, a reader per column, and what each column holds."""

    def __init__(self, names: List[str], n: int, read: Callable[[str], Any], kind: Callable[[str], str],
                 images: Optional[Callable[[str], Iterable[Any]]] = None, label_names: Optional[Callable] = None):
        self.names, self.n, self.read, self.kind = names, n, read, kind
        self.images = images or (lambda c: self.read(c))
        self.label_names = label_names or (lambda c, values: values)


def _kind_of_values(values: Any) -> str:
    """'numeric', 'vector', 'image', 'text' or 'other' from a column's values."""
    arr = np.asarray(values) if not isinstance(values, list) else None
    if arr is not None and arr.dtype.kind in "biuf":
        return "numeric"
    seq = list(values) if arr is None or arr.dtype == object else arr.tolist()
    first = next((v for v in seq if v is not None), None)
    if first is None:
        return "other"
    if _is_pil(first):
        return "image"
    if isinstance(first, str):
        return "text"
    number = (int, float, bool, np.number)
    if isinstance(first, number) and all(isinstance(v, number) for v in seq):
        return "numeric"
    if isinstance(first, (list, tuple, np.ndarray)) and np.asarray(first).dtype.kind in "biuf":
        return "vector"
    return "other"


def _dataframe_columns(df: Any) -> _Columns:
    names = [str(c) for c in df.columns]
    if len(set(names)) != len(names):
        raise SibscanError("the DataFrame has duplicate column names; rename them first")
    pos = {name: j for j, name in enumerate(names)}

    def read(c: str):
        col = df.iloc[:, pos[c]]
        if col.dtype.kind in "biuf":
            return col.to_numpy(dtype=np.float64, na_value=np.nan)
        return col.tolist()

    return _Columns(names, len(df), read, lambda c: _kind_of_values(read(c)))


def _dict_columns(d: Dict[Any, Any]) -> _Columns:
    names = [str(k) for k in d]
    cols = {str(k): v for k, v in d.items()}
    lengths = {len(v) for v in cols.values()}
    if len(lengths) > 1:
        raise SibscanError(f"the columns have different lengths ({sorted(lengths)}); give one value per row in each")
    read = lambda c: cols[c]  # noqa: E731
    return _Columns(names, lengths.pop() if lengths else 0, read, lambda c: _kind_of_values(cols[c]))


def _hf_columns(ds: Any) -> _Columns:
    features = ds.features

    def kind(c: str) -> str:
        f = features[c]
        t = type(f).__name__
        if t == "Image":
            return "image"
        if t == "ClassLabel":
            return "numeric"
        if t == "Value":
            d = str(getattr(f, "dtype", ""))
            if d in ("string", "large_string"):
                return "text"
            return "numeric" if d.startswith(("int", "uint", "float", "bool")) else "other"
        if t in ("List", "Sequence", "LargeList", "Array2D", "Array3D"):
            return "vector"
        return "other"

    def images(c: str) -> Iterator[Any]:
        import datasets

        raw = ds.select_columns([c]).cast_column(c, datasets.Image(decode=False))
        for batch in raw.iter(batch_size=256):  # stored bytes as they are: no decode and re-encode
            yield from batch[c]

    def label_names(c: str, values):
        f = features[c]
        if type(f).__name__ == "ClassLabel":
            return [None if v is None or v < 0 else f.int2str(int(v)) for v in values]
        return values

    return _Columns(list(ds.column_names), len(ds), lambda c: list(ds[c]), kind, images, label_names)


def _from_columns(cols: _Columns, ctx: _Context, label, id_, group, text_field, path_field) -> Items:  # noqa: C901
    def need(name: Optional[str], what: str) -> Optional[str]:
        if name is not None and name not in cols.names:
            raise InputError(f"no {what} column {name!r}; columns: {', '.join(cols.names)}", path=ctx.source)
        return name

    if cols.n == 0:
        raise InputError("no rows", path=ctx.source)
    label, id_, group = need(label, "label"), need(id_, "id"), need(group, "group")
    text_field, path_field = need(text_field, "text"), need(path_field, "image path")
    if text_field is not None and path_field is not None:
        raise SibscanError("give either text_field or path_field, not both")
    if label is None:
        label = label_field(cols.names, (id_, group))
    special = [c for c in (label, id_, group) if c is not None]

    def strings(c: Optional[str]):
        if c is None:
            return None
        values = cols.read(c)
        values = values.tolist() if isinstance(values, np.ndarray) else list(values)
        values = cols.label_names(c, values) if c == label else values
        return ["" if v is None or (isinstance(v, float) and np.isnan(v)) else _label_text(v) for v in values]

    labels, ids, groups = strings(label), strings(id_), strings(group)
    rest = [c for c in cols.names if c not in special]
    kinds = {c: cols.kind(c) for c in rest}
    image_cols = [c for c in rest if kinds[c] == "image"]
    if text_field is not None:
        return ctx.texts(list(cols.read(text_field)), ids, labels, groups)
    if path_field is not None:
        return ctx.image_paths(list(cols.read(path_field)), ids, labels, groups)
    if ctx.modality == "image" or image_cols:
        if len(image_cols) != 1:
            raise SibscanError(f"{ctx.source}: {'several' if image_cols else 'no'} image columns "
                               f"({', '.join(image_cols) or 'none'}); keep the one to scan")
        return ctx.images(cols.images(image_cols[0]), cols.n, ids, labels, groups)
    if ctx.modality != "text" and rest and all(kinds[c] in ("numeric", "vector") for c in rest):
        parts = []
        for c in rest:
            values = cols.read(c)
            if kinds[c] == "vector":
                parts.append(np.stack([np.asarray(v, dtype=np.float64).ravel() for v in values]))
            else:
                parts.append(np.asarray([np.nan if v is None else v for v in values], dtype=np.float64)[:, None])

        items = build_table_items(Path(ctx.source), ctx.split, np.hstack(parts), labels=_arr(labels), ids=_arr(ids),
                                  groups=_arr(groups))
        return ctx.checked(items)
    if "text" in rest and kinds["text"] == "text":
        return ctx.texts(list(cols.read("text")), ids, labels, groups)
    other = [c for c in rest if kinds[c] not in ("numeric", "vector")]
    raise InputError(f"columns {', '.join(other) or '(none)'} are not numeric, and there is no image column or "
                     "'text' column; name the content with text_field= (texts) or path_field= (image paths)",
                     path=ctx.source)


def _label_text(v: Any) -> str:
    # integer-valued float labels (1.0) print as 1, as labels read from a file do
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    return str(v)


def _arr(values: Optional[List[str]]) -> Optional[np.ndarray]:
    return None if values is None else np.asarray(values, dtype=str)


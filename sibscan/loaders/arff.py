"""Read Weka ``.arff`` tables: numeric attributes plus a nominal class.

Supported: ``numeric``/``real``/``integer`` attributes (the features), nominal ``{a,b,c}`` and
``string`` attributes used as label, id or group, ``?`` missing values, ``%`` comments, quoted
names. Not supported (a clear error says so): relational attributes (multivariate UEA ``.arff``;
use the ``.ts`` file instead), sparse ``{i v, ...}`` rows.

The label is the attribute named by ``label=``; otherwise one named ``class``/``target``, otherwise
the last nominal attribute.
"""
from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import List, Optional, Tuple

import numpy as np

from ..errors import InputError
from ..items import Items
from .rows import TABLE_HINT, build_table_items, read_text_lines, strings_to_float

__all__ = ["load_arff"]

_ATTR = re.compile(r"""@attribute\s+('(?:[^']*)'|"(?:[^"]*)"|\S+)\s+(.*)$""", re.IGNORECASE)
_NUMERIC = ("numeric", "real", "integer")


def _attributes(lines: List[str], path: Path) -> Tuple[List[Tuple[str, str]], int]:
    attrs: List[Tuple[str, str]] = []
    for i, raw in enumerate(lines):
        line = raw.strip()
        if not line or line.startswith("%"):
            continue
        low = line.lower()
        if low.startswith("@data"):
            return attrs, i + 1
        if low.startswith("@attribute"):
            m = _ATTR.match(line)
            if not m:
                raise InputError(f"cannot parse attribute line {line[:60]!r}", path=path, row=i + 1)
            name, typ = m.group(1).strip("'\""), m.group(2).strip()
            kind = typ.lower()
            if kind.startswith("relational"):
                raise InputError(f"attribute {name!r} is relational (a multivariate ARFF); this is not "
                                 "supported — load the .ts version of the dataset instead", path=path, row=i + 1)
            if kind.startswith("{"):
                kind = "nominal"
            elif kind.split()[0] in _NUMERIC:
                kind = "numeric"
            elif kind.startswith("string"):
                kind = "string"
            elif kind.startswith("date"):
                kind = "date"
            else:
                raise InputError(f"unknown attribute type {typ!r}", path=path, row=i + 1)
            attrs.append((name, kind))
        elif low.startswith("@end"):
            break
    raise InputError("no @data line; an .arff file needs @attribute lines, then @data, then the rows",
                     path=path)


def load_arff(path: str | Path, split: str, *, label: Optional[str] = None, id: Optional[str] = None,  # noqa: A002
              group: Optional[str] = None) -> Items:
    """Load an ``.arff`` file.

    Parameters
    ----------
    path : path
    split : {"train", "test"}
    label, id, group : str, optional
        Attribute names; see the module docstring for the default label.

    Returns
    -------
    Items
        ``modality="table"`` with ``values`` of shape ``(n, n_numeric_attributes)``.
    """
    path = Path(path)
    lines = read_text_lines(path)
    if not any(s.strip() for s in lines):
        raise InputError("empty file", path=path)
    attrs, start = _attributes(lines, path)
    names = [a for a, _ in attrs]
    kinds = [k for _, k in attrs]

    def pick(wanted, what):
        if wanted is None:
            return None
        if wanted not in names:
            raise InputError(f"unknown {what} attribute {wanted!r}; available: {', '.join(names[:20])}", path=path)
        return names.index(wanted)

    li = pick(label, "label")
    if li is None and label is None:
        lower = [n.lower() for n in names]
        li = next((lower.index(c) for c in ("class", "target") if c in lower), None)
        if li is None:
            nominal = [j for j, k in enumerate(kinds) if k == "nominal"]
            li = nominal[-1] if nominal else None
    ii, gi = pick(id, "id"), pick(group, "group")
    special = {j for j in (li, ii, gi) if j is not None}
    for j, (name, kind) in enumerate(attrs):
        if j not in special and kind != "numeric":
            raise InputError(f"attribute {name!r} is {kind}, not numeric; " + TABLE_HINT, path=path)
    rows: List[List[str]] = []
    line_no: List[int] = []
    body = [(i, ln) for i, ln in enumerate(lines[start:], start=start + 1)
            if ln.strip() and not ln.lstrip().startswith("%")]
    for (i, ln), row in zip(body, csv.reader([ln for _, ln in body], quotechar="'", skipinitialspace=True)):
        if ln.lstrip().startswith("{"):
            raise InputError("sparse ARFF rows ({index value, ...}) are not supported", path=path, row=i)
        if len(row) != len(attrs):
            raise InputError(f"has {len(row)} values, expected {len(attrs)} (one per @attribute)", path=path, row=i)
        rows.append(row)
        line_no.append(i)
    if not rows:
        raise InputError("no data rows after @data", path=path)
    cells = np.array(rows, dtype=str)
    keep = [j for j in range(len(attrs)) if j not in special]
    values = strings_to_float(cells[:, keep], path, [names[j] for j in keep], np.asarray(line_no))
    col = lambda j: None if j is None else np.char.strip(np.char.strip(cells[:, j]), "'\"")  # noqa: E731
    return build_table_items(path, split, values, labels=col(li), ids=col(ii), groups=col(gi))

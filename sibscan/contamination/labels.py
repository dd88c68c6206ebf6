"""Known verdicts for some examples (contaminated or clean), to measure each method against."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, Mapping, Union

from ..errors import InputError
from ..loaders.records import read_columns
from .examples import Examples

__all__ = ["load_labels", "parse_label"]

_TRUE = {"1", "true", "yes", "y", "contaminated", "leaked"}
_FALSE = {"0", "false", "no", "n", "clean"}


def parse_label(value, where: str, row: int) -> bool:
    """A label cell as a bool: 1/0, true/false, yes/no, contaminated/clean.

    ``row`` is the 1-based line of the record in the file ``where`` (or its position, from 1)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().casefold()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise InputError(f"label {value!r} is not one of 1/0, true/false, yes/no, contaminated/clean", path=where, row=row)


def load_labels(labels: Union[str, Path, Mapping[str, object]], examples: Examples, *, id_field: str = "id",
                label_field: str = "contaminated") -> Dict[str, bool]:
    """Labels keyed by example id, every id checked against the examples.

    Parameters
    ----------
    labels : path (JSONL / CSV / TSV / Parquet with ``id_field`` and ``label_field``) or mapping
    examples : Examples
    id_field, label_field : str

    Returns
    -------
    dict example id -> bool (True: contaminated)
    """
    if isinstance(labels, Mapping):
        where, rows = "labels", [(str(k), v) for k, v in labels.items()]
        lines = list(range(1, len(rows) + 1))
    else:
        path = Path(labels)
        if not path.is_file():
            raise InputError("no such file", path=path)
        names, cols, lines = read_columns(path)  # the file line of each record, from 1
        for f in (id_field, label_field):
            if f not in cols:
                raise InputError(f"no {f!r} column; columns: {', '.join(names)}", path=path)
        where, rows = str(path), list(zip([str(i) for i in cols[id_field]], cols[label_field]))
    known = set(examples.ids)
    out: Dict[str, bool] = {}
    for line, (i, v) in zip(lines, rows):
        if i not in known:
            raise InputError(f"label for unknown example id {i!r}; labels must name examples being audited",
                             path=where, row=line)
        out[i] = parse_label(v, where, line)
    if not out:
        raise InputError("no labels", path=where)
    return out

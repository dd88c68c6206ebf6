"""``sibscan encoders``: list every registered encoder, its modality, dim and whether it runs here."""
from __future__ import annotations

import json
from typing import List, Optional

import typer

from ..errors import SibscanError
from ..items import MODALITIES
from ._common import Command, user_errors
from ._flags import EncodersOptions
from ._options import with_options

__all__ = ["encoder_rows", "register"]


def _known_dim(cls) -> Optional[int]:
    """The dimension without loading weights: a class-level ``dim``, or a weight-free encoder's
    default instance (cheap by contract); None when it depends on the data or the weights."""
    dim = cls.__dict__.get("dim") or getattr(cls, "default_dim", None)
    if isinstance(dim, int):
        return dim
    if cls.weight_free and cls.available()[0]:
        try:
            dim = cls(device="cpu").dim
        except (SibscanError, TypeError):
            return None
        return dim if isinstance(dim, int) else None
    return None


def encoder_rows(modality: Optional[str] = None) -> List[dict]:
    """One dict per registered encoder: name, modality, dim (int or None), weight_free, usable,
    why (empty when usable), description."""
    from ..encoders import list_encoders

    if modality is not None and modality not in MODALITIES:
        raise SibscanError(f"unknown modality {modality!r}; available: {', '.join(MODALITIES)}")
    rows = []
    for cls in list_encoders(modality):
        ok, why = cls.available()
        rows.append({
            "name": cls.name,
            "modality": cls.modality,
            "dim": _known_dim(cls),
            "weight_free": bool(cls.weight_free),
            "usable": bool(ok),
            "why": "" if ok else why,
            "description": cls.description,
        })
    return rows


def _table(rows: List[dict]) -> str:
    head = ["name", "modality", "dim", "weights", "usable", "notes"]
    body = [
        [
            r["name"],
            r["modality"],
            "?" if r["dim"] is None else str(r["dim"]),
            "none" if r["weight_free"] else "needed",
            "yes" if r["usable"] else "no",
            r["why"] or r["description"],
        ]
        for r in rows
    ]
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]
    fmt = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    return "\n".join([fmt(head), fmt(["-" * w for w in widths]), *map(fmt, body)])


def register(app: typer.Typer) -> None:
    @app.command("encoders", cls=Command)
    @user_errors
    @with_options((EncodersOptions, {}), spread=True)
    def encoders(modality=None, as_json=False) -> None:
        """List the encoders and whether each can run here.

        Columns: modality, dimension ("?" = depends on the data or the weights), whether it needs
        weights, whether it is usable now (and if not, why).
        """
        rows = encoder_rows(modality)
        if as_json:
            typer.echo(json.dumps(rows, indent=2))
        else:
            typer.echo(_table(rows))

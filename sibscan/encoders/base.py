"""The encoder contract and its registry.

An encoder has a class-level ``name`` and ``modality``, and an instance ``dim`` and ``identity``
(a string that changes whenever its weights or preprocessing change: the embedding cache, scans,
indexes and calibrations are keyed by it).  ``encode(batch)`` returns a float32 array of shape
``(len(batch), dim)`` whose rows are L2-normalised.

A batch is a slice of the modality's content: a list of image paths, a list of strings, or a
float64 array of numeric rows (see :class:`sibscan.items.Items`).
"""
from __future__ import annotations

from typing import Any, ClassVar, Sequence, Tuple, Type

import numpy as np

from ..device import resolve_device
from ..errors import SibscanError
from ..registry import Registry

__all__ = ["ENCODERS", "Encoder", "cpu_device", "register_encoder", "get_encoder", "list_encoders", "encoder_class",
           "l2_normalise"]


# float32 squares overflow past ~1.8e19 and underflow below ~1e-19: rows outside this range are rescaled
_SAFE_MAX, _SAFE_MIN = 1e15, 1e-15


def l2_normalise(x: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    """Rows of ``x`` scaled to unit L2 norm (zero rows stay zero), as float32.

    A row whose largest magnitude is beyond 1e15 or below 1e-15 is first divided by it (in float64),
    so that neither the float32 cast nor the squares of the norm overflow or underflow: a row of
    1e300s normalises like a row of 1s instead of becoming a zero row.
    """
    x = np.asarray(x)
    if x.dtype.kind == "f" and x.ndim == 2 and x.size:
        with np.errstate(invalid="ignore"):
            mag = np.max(np.abs(x), axis=1)
        extreme = np.isfinite(mag) & ((mag > _SAFE_MAX) | ((mag < _SAFE_MIN) & (mag > 0)))
        if extreme.any():
            x = np.array(x, dtype=np.float64)
            x[extreme] /= mag[extreme, None]
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norms, eps)


class Encoder:
    """Base class of every encoder. Subclasses set ``name``, ``modality`` and implement ``encode``."""

    name: ClassVar[str] = ""
    modality: ClassVar[str] = ""
    #: one line for ``sibscan encoders``
    description: ClassVar[str] = ""
    #: True when the encoder needs no downloaded weights
    weight_free: ClassVar[bool] = True

    dim: int
    identity: str
    device: str = "cpu"
    #: default batch size for ``encode`` calls made by the scan
    batch_size: int = 256

    @classmethod
    def available(cls) -> Tuple[bool, str]:
        """Whether the encoder can run here, and if not, why (e.g. the extra to install)."""
        return True, ""

    def encode(self, batch: Sequence[Any]) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.identity}>"


#: every encoder class by name; importing sibscan.encoders.builtin registers the built-in ones
#: (their heavy dependencies stay lazy inside them)
ENCODERS: Registry[Type[Encoder]] = Registry("encoder", builtin="sibscan.encoders.builtin")
#: class decorator: add an encoder class under its ``name``
register_encoder = ENCODERS.register


#: registered encoder classes, sorted by name, optionally of one modality
list_encoders = ENCODERS.list
#: the registered encoder class of a name; an unknown name lists the available ones
encoder_class = ENCODERS.get


def cpu_device(device: str) -> str:
    """``"cpu"`` for an encoder that computes with numpy, once ``device`` passed the one device policy."""
    resolve_device(device)
    return "cpu"


def get_encoder(name: str, **options: Any) -> Encoder:
    """Build encoder ``name`` with ``options`` (e.g. ``device``, ``model``, ``checkpoint``)."""
    cls = encoder_class(name)
    ok, why = cls.available()
    if not ok:
        raise SibscanError(f"encoder {name!r} cannot run here: {why}")
    return cls(**options)

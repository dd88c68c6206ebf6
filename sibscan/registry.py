"""One small registry of plug-in classes by name, shared by encoders and verifiers.

Each plug-in is a class with a class-level ``name`` and ``modality``; ``register`` is its class
decorator.  Built-in plug-ins register themselves when their modules are imported, which the
registry does on first use (``builtin`` names that module), so listing them stays cheap: heavy
dependencies are imported inside the plug-ins, not by their modules.
"""
from __future__ import annotations

import importlib
import warnings
from typing import Dict, Generic, List, Optional, TypeVar

from .errors import SibscanError

__all__ = ["Registry"]

T = TypeVar("T", bound=type)


class Registry(Generic[T]):
    """Plug-in classes by name.

    Parameters
    ----------
    kind : str
        What the plug-ins are, for messages ("encoder", "verifier").
    builtin : str
        Module whose import registers the built-in plug-ins.
    """

    def __init__(self, kind: str, builtin: str):
        self.kind = kind
        self._builtin = builtin
        self._classes: Dict[str, T] = {}

    def register(self, cls: T) -> T:
        """Class decorator: add ``cls`` under ``cls.name``; a second class under a name warns and wins."""
        if not getattr(cls, "name", ""):
            raise ValueError(f"{cls.__name__} has no name")
        old = self._classes.get(cls.name)
        if old is not None and old is not cls:
            warnings.warn(f"{self.kind} {cls.name!r} registered again: {cls.__module__}.{cls.__qualname__} "
                          f"replaces {old.__module__}.{old.__qualname__}", stacklevel=2)
        self._classes[cls.name] = cls
        return cls

    def _load_builtin(self) -> None:
        importlib.import_module(self._builtin)

    def list(self, modality: Optional[str] = None) -> List[T]:
        """Registered classes sorted by name, optionally of one modality."""
        self._load_builtin()
        return [self._classes[n] for n in sorted(self._classes)
                if modality is None or self._classes[n].modality == modality]

    def get(self, name: str) -> T:
        """The class registered as ``name``; an unknown name lists the registered ones."""
        self._load_builtin()
        try:
            return self._classes[name]
        except KeyError:
            raise SibscanError(f"unknown {self.kind} {name!r}; available: {', '.join(sorted(self._classes))}") from None

"""The verifier contract and its registry.

An embedding finds candidates; a verifier decides.  A verifier has a class-level ``name`` and
``modality``, an instance ``identity`` (recorded in the scan; calibrations refuse labels made under
another), and ``verify`` which re-scores candidate pairs with a transform-invariant similarity.
Cost is O(number of pairs): the scan passes each test item's top-k candidates, never all pairs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, List, Optional, Type

import numpy as np

from ..items import Items
from ..registry import Registry

__all__ = ["VERIFIERS", "Verifier", "VerifyResult", "default_verifier", "get_verifier", "list_verifiers",
           "register_verifier", "verifier_class"]


@dataclass
class VerifyResult:
    """Verified similarity of each pair and how it was reached.

    Attributes
    ----------
    scores : ndarray of shape (m,), float32
        Verified similarity in [-1, 1] (1 = identical up to the allowed transforms).
    details : list of str, length m
        Human-readable best transform or matching span ("flipped, shifted 2 px", "lag 3").
    """

    scores: np.ndarray
    details: List[str]


class Verifier:
    name: ClassVar[str] = ""
    modality: ClassVar[str] = ""
    description: ClassVar[str] = ""
    identity: str = ""
    #: modules the verifier needs, with the extra that installs them: ((module, extra), ...)
    requires: ClassVar[tuple] = ()

    @classmethod
    def available(cls) -> tuple:
        """``(True, "")`` when the verifier can run here, else ``(False, why and what to install)``."""
        import importlib.util

        for module, extra in cls.requires:
            if importlib.util.find_spec(module) is None:
                return False, f"{module} is not installed; install it with: pip install 'sibscan[{extra}]'"
        return True, ""

    def verify(
        self, queries: Items, query_index: np.ndarray, database: Items, database_index: np.ndarray
    ) -> VerifyResult:  # pragma: no cover - interface
        """Score pairs ``(queries[query_index[i]], database[database_index[i]])``."""
        raise NotImplementedError


#: every verifier class by name; importing sibscan.verify.builtin registers the built-in ones
VERIFIERS: Registry[Type[Verifier]] = Registry("verifier", builtin="sibscan.verify.builtin")
#: class decorator: add a verifier class under its ``name``
register_verifier = VERIFIERS.register


def list_verifiers(modality: Optional[str] = None) -> List[Type[Verifier]]:
    """Registered verifier classes, sorted by name, optionally of one modality."""
    return VERIFIERS.list(modality)


def verifier_class(name: str) -> Type[Verifier]:
    """The registered verifier class ``name``; unknown names list the available ones."""
    return VERIFIERS.get(name)


def get_verifier(name: str, **options) -> Verifier:
    return verifier_class(name)(**options)


def default_verifier(modality: str) -> Optional[str]:
    """Name of the default verifier for a modality, or None when there is none."""
    classes = list_verifiers(modality)
    return classes[0].name if classes else None

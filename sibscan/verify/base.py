"""The verifier contract and its registry.

An embedding finds candidates; a verifier decides.  A verifier has a class-level ``name`` and
``modality``, an instance ``identity`` (recorded in the scan; calibrations refuse labels made under
another), and ``verify`` which re-scores candidate pairs with a transform-invariant similarity.
Cost is O(number of pairs): the scan passes each test item's top-k candidates, never all pairs.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, List, Optional, Tuple, Type

import numpy as np

from ..errors import SibscanError
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

    def pair_index(self, queries: Items, query_index, database: Items, database_index) -> Tuple[np.ndarray, np.ndarray]:
        """``(query rows, database rows)`` as flat int64 arrays of shape (m,), once both sides are
        items of this verifier's modality."""
        for items in (queries, database):
            if items.modality != self.modality:
                raise SibscanError(f"verifier {self.name} works on {_WHAT[self.modality]}, not {items.modality} items "
                                   f"({items.split})")
        qi = np.asarray(query_index, dtype=np.int64).ravel()
        di = np.asarray(database_index, dtype=np.int64).ravel()
        if len(qi) != len(di):
            raise ValueError(f"query_index has {len(qi)} pairs, database_index {len(di)}")
        return qi, di

    def verify(
        self, queries: Items, query_index: np.ndarray, database: Items, database_index: np.ndarray
    ) -> VerifyResult:  # pragma: no cover - interface
        """Score pairs ``(queries[query_index[i]], database[database_index[i]])``."""
        raise NotImplementedError


#: what each modality's items are called in messages
_WHAT = {"image": "images", "table": "tables/series", "text": "text"}

#: every verifier class by name; importing sibscan.verify.builtin registers the built-in ones
VERIFIERS: Registry[Type[Verifier]] = Registry("verifier", builtin="sibscan.verify.builtin")
#: class decorator: add a verifier class under its ``name``
register_verifier = VERIFIERS.register


#: registered verifier classes, sorted by name, optionally of one modality
list_verifiers = VERIFIERS.list
#: the registered verifier class of a name; an unknown name lists the available ones
verifier_class = VERIFIERS.get


def get_verifier(name: str, **options) -> Verifier:
    return verifier_class(name)(**options)


def default_verifier(modality: str) -> Optional[str]:
    """Name of the default verifier for a modality, or None when there is none."""
    classes = list_verifiers(modality)
    return classes[0].name if classes else None

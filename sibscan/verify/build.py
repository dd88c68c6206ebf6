"""Which verifier a scan uses, built from its options: the default per modality, or none."""
from __future__ import annotations

import inspect
import logging
from typing import Optional

from ..errors import SibscanError
from ..options import VerifyOptions
from .base import Verifier, default_verifier, get_verifier, list_verifiers, verifier_class

__all__ = ["build_verifier"]

log = logging.getLogger("sibscan.verify")


def build_verifier(options: VerifyOptions, modality: str, device: str = "auto",
                   progress: bool = True) -> Optional[Verifier]:
    """The verifier for ``modality`` items, or None (``--no-verify``, none exists, or the default cannot run).

    An explicit ``--verify`` whose verifier cannot run is an error naming the extra to install;
    a default that cannot run (a core install without torch) turns verification off with a warning.
    ``device`` is the scan's ``--device``: a verifier that runs on torch runs there too (``--device cpu``
    on a GPU machine verifies on the CPU); one without a device (``textalign``) ignores it.  ``progress``
    is the scan's ``--progress/--no-progress``, likewise passed to a verifier that shows progress of its own.
    """
    if options.verify is False:
        return None
    name = options.verifier or default_verifier(modality)
    if name is None:
        if options.verify:
            raise SibscanError(f"no verifier exists for {modality} items; drop --verify")
        return None
    ok, why = verifier_class(name).available()
    if not ok:
        if options.verify:
            raise SibscanError(f"verifier {name!r} cannot run here: {why}; or scan with --no-verify")
        log.warning("verification is off: verifier %r cannot run here (%s)", name, why)
        return None
    given = {"device": device, "progress": progress}
    verifier = get_verifier(name, **{k: v for k, v in given.items() if _accepts(verifier_class(name), k)})
    if verifier.modality != modality:
        names = ", ".join(c.name for c in list_verifiers(modality)) or "none"
        raise SibscanError(f"verifier {name!r} is for {verifier.modality} items, not {modality}; available: {names}")
    return verifier


def _accepts(cls, name: str) -> bool:
    """Whether ``cls(name=...)`` is accepted: its ``__init__`` or, through ``**options``, a base's names it."""
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        params = inspect.signature(init).parameters
        if name in params:
            return True
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            return False
    return False

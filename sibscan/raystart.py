"""How sibscan starts or joins Ray: one place for every engine that runs work as Ray tasks.

The search engine (:mod:`sibscan.search.rayengine`), the block encoder
(:mod:`sibscan.engines.ray_embed`), the n-gram index build (:mod:`sibscan.contamination.ray_build`)
and the temporal archive (:mod:`sibscan.temporal.archive`) all call :func:`ray_session`.
"""
from __future__ import annotations

import logging
from typing import Any, Optional

from .errors import SibscanError, require

__all__ = ["ray_session"]


def ray_session(address: Optional[str] = None, num_cpus: Optional[int] = None, *,
                purpose: str = "the Ray engine") -> Any:
    """Return the ``ray`` module with a session running: the one in this process, else a new one.

    Parameters
    ----------
    address : str, optional
        Ray cluster address (``"auto"``: the cluster this machine belongs to); None starts a local
        Ray unless one already runs in this process.
    num_cpus : int, optional
        CPUs of a local Ray started here (ignored when one already runs).
    purpose : str
        What needs Ray, for the message when it is not installed.

    Raises
    ------
    SibscanError
        Ray is not installed (names the extra), ``address`` is not an address, or the cluster at it
        cannot be reached.
    """
    ray = require("ray", "ray", purpose)
    if not ray.is_initialized():
        try:
            ray.init(address=address, num_cpus=num_cpus, include_dashboard=False,
                     logging_level=logging.WARNING, log_to_driver=False)
        except ConnectionError as exc:
            raise SibscanError(f"cannot reach the Ray cluster at {address!r} ({exc}); "
                               "check `ray status`, or leave out the address to run on a local Ray") from None
        except ValueError as exc:  # Ray refuses options before it starts: a malformed address among them
            if address is not None and "address" in str(exc).lower():  # "Invalid address format: x"
                raise SibscanError(f"--address {address!r} is not a Ray address ({exc}); give HOST:PORT, "
                                   "ray://HOST:PORT or auto, or leave it out to run on a local Ray") from None
            raise SibscanError(f"Ray refused to start: {exc}") from None
    return ray

"""Is a series dataset z-normalised, and normalising it the way the temporal test needs.

Most of the UCR archive ships z-normalised (every series has mean 0 and standard deviation 1), but
21 of its 112 equal-length datasets do not (PowerCons, Crop, InsectEPG*, GunPoint*, Pig*, …). On
those, a class that differs from another only by its level or its scale passes the permutation
test for free: a shuffled time axis keeps every series' mean. Zhang et al. (PAKDD 2025) therefore
remove each series' mean before the test. Two methods:

* ``"demean"`` — what the paper's permutation code does: subtract each series' (each channel's)
  own mean, then divide every value by one common scale, the standard deviation of all centred
  values of the dataset (per channel). Relative amplitude between series survives; the level does
  not.
* ``"znorm"`` — per-series z-normalisation: also each series' own scale is removed. The UCR
  Augmented construction uses this one.

:func:`check_znormalised` measures the share of series (per channel) whose mean is within
``tol`` of 0 and whose standard deviation (population or sample) is within ``tol`` of 1;
:func:`choose_normalisation` turns it into the decision, with the reason written out.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict

import numpy as np

from ..errors import SibscanError
from ..options import NORMALISATIONS

__all__ = ["ZNORM_SHARE", "ZNORM_TOL", "Normalisation", "apply_normalisation", "check_znormalised",
           "choose_normalisation", "demean_scale", "normalise"]

#: a series counts as z-normalised when |mean| and |std - 1| are both within this (archive files
#: are written with 6-8 significant digits, and some were z-normalised with the sample std)
ZNORM_TOL = 0.02
#: a dataset counts as z-normalised when at least this share of its series are
ZNORM_SHARE = 0.99


def check_znormalised(x: np.ndarray, tol: float = ZNORM_TOL) -> float:
    """Share of series (each channel counted apart) that look z-normalised.

    Parameters
    ----------
    x : ndarray of shape (n, n_channels, length)
    tol : float
        Allowed ``|mean|`` and ``|std - 1|`` (the better of the population and sample std).
        A constant series with mean 0 counts as normalised (z-normalising it gives zeros).

    Returns
    -------
    float
        In [0, 1].
    """
    x = np.asarray(x, dtype=np.float64)
    length = x.shape[-1]
    mean = x.mean(axis=-1)
    std0 = x.std(axis=-1)
    std1 = std0 * np.sqrt(length / max(length - 1, 1))
    scale_ok = (np.minimum(np.abs(std0 - 1), np.abs(std1 - 1)) <= tol) | (std0 == 0)
    ok = (np.abs(mean) <= tol) & scale_ok
    return float(ok.mean()) if ok.size else 1.0


def normalise(x: np.ndarray, method: str, scale: np.ndarray | None = None) -> np.ndarray:
    """Normalise every series; returns a new array.

    Parameters
    ----------
    x : ndarray of shape (n, n_channels, length)
    method : {"demean", "znorm"}
    scale : ndarray of shape (n_channels,), optional
        For ``"demean"``: the common divisor per channel (default: the std of the centred values
        of ``x``). Pass the one computed over train and test together so both splits share it.

    Returns
    -------
    ndarray of shape (n, n_channels, length), float64
        ``"znorm"``: a series with std 0 becomes zeros.
    """
    if method not in NORMALISATIONS:
        raise SibscanError(f"unknown normalisation {method!r}; available: {', '.join(NORMALISATIONS)}")
    x = np.asarray(x, dtype=np.float64)
    centred = x - x.mean(axis=-1, keepdims=True)
    if method == "znorm":
        std = centred.std(axis=-1, keepdims=True)
        return np.divide(centred, std, out=np.zeros_like(centred), where=std > 0)
    if scale is None:
        scale = demean_scale(x)
    scale = np.where(np.asarray(scale, dtype=np.float64) > 0, scale, 1.0)
    return centred / scale[None, :, None]


def demean_scale(*arrays: np.ndarray) -> np.ndarray:
    """The ``"demean"`` divisor per channel: the std of all series-centred values of ``arrays``.

    Returns
    -------
    ndarray of shape (n_channels,)
    """
    centred = [a - a.mean(axis=-1, keepdims=True) for a in arrays]
    pooled = np.concatenate([c.transpose(1, 0, 2).reshape(c.shape[1], -1) for c in centred], axis=1)
    return pooled.std(axis=1)


@dataclass(frozen=True)
class Normalisation:
    """What was done to the series before the test, and why.

    Attributes
    ----------
    applied : {"none", "demean", "znorm"}
    znormalised_share : float
        Share of series (train and test, per channel) that already looked z-normalised.
    reason : str
        One sentence for the report.
    """

    applied: str
    znormalised_share: float
    reason: str

    def to_dict(self) -> Dict[str, object]:
        return {"applied": self.applied, "znormalised_share": self.znormalised_share, "reason": self.reason}


def choose_normalisation(x_train: np.ndarray, x_test: np.ndarray, *, enabled: bool = True,
                         method: str = "demean") -> Normalisation:
    """Decide whether to normalise a dataset before the test.

    Parameters
    ----------
    x_train, x_test : ndarray of shape (n, n_channels, length)
    enabled : bool
        False (``--no-normalise``): test the raw values whatever they are.
    method : {"demean", "znorm"}
        Used when the series are not already z-normalised.
    """
    if method not in NORMALISATIONS:
        raise SibscanError(f"unknown normalisation {method!r}; available: {', '.join(NORMALISATIONS)}")
    n = len(x_train) + len(x_test)
    share = (check_znormalised(x_train) * len(x_train) + check_znormalised(x_test) * len(x_test)) / max(n, 1)
    pct = f"{share * 100:.1f} % of series look z-normalised"
    if not enabled:
        return Normalisation("none", share, f"raw values tested as asked (--no-normalise); {pct}")
    if share >= ZNORM_SHARE:
        return Normalisation("none", share, f"already z-normalised ({pct}); tested as given")
    how = ("each series' mean removed, one common scale" if method == "demean"
           else "each series z-normalised")
    return Normalisation(method, share, f"not z-normalised ({pct}): {how}, so a level difference between "
                                        "classes cannot pass for 'time does not matter'")


def apply_normalisation(x_train: np.ndarray, x_test: np.ndarray, decision: Normalisation):
    """Apply :func:`choose_normalisation`'s decision to both splits (one shared ``demean`` scale)."""
    if decision.applied == "none":
        return x_train, x_test
    scale = demean_scale(x_train, x_test) if decision.applied == "demean" else None
    return normalise(x_train, decision.applied, scale), normalise(x_test, decision.applied, scale)

"""Min-K% and Min-K%++ membership scores from a causal LM's per-token log-distribution.

For token ``x_t`` after prefix ``x_<t``, with the model's next-token distribution ``p``:

* Min-K% (Shi et al. 2024): the mean of the lowest ``k`` % of ``log p(x_t | x_<t)``;
* Min-K%++ (Zhang et al. 2025): the same over ``(log p(x_t) - mu_t) / sigma_t``, where
  ``mu_t = E_{z~p}[log p(z)]`` (the negative entropy) and ``sigma_t`` the standard deviation of
  ``log p(z)`` *under the same distribution ``p``*.  Training pushes a member's tokens towards local
  maxima of the likelihood, so they sit high relative to the model's own expectation.
* perplexity: ``exp(-mean log p(x_t))`` — lower is more member-like.

The pitfall this module avoids: ``mu`` and ``sigma`` are expectations under ``p``, not unweighted
means over the vocabulary.  On a 50,000-word Zipf(1.2) distribution the unweighted mean of
``log p`` is -13.40 while the expectation is -5.40, and the unweighted standard deviation (1.20) is
about a third of the true one (3.47) — scores built on them are shifted and inflated (tested).

Direction: higher Min-K% and Min-K%++ mean more member-like (contaminated); higher perplexity
means less.
"""
from __future__ import annotations

import math
from typing import Dict, Optional

import numpy as np

__all__ = ["DEFAULT_K", "distribution_stats", "distribution_stats_numpy", "min_k_scores"]

DEFAULT_K = 0.2  # the fraction of tokens averaged, 20 % as both papers' default


def distribution_stats(logits, targets, chunk_rows: int = 512):
    """Per-position target log-probability and the log-distribution's mean and std under itself.

    Parameters
    ----------
    logits : torch.Tensor of shape (m, V)
        Next-token logits (any float dtype; computed in float32).
    targets : torch.Tensor of shape (m,), int64
        The token that actually followed.
    chunk_rows : int
        Rows processed at a time (bounds the (rows, V) float32 temporaries).

    Returns
    -------
    logp, mu, sigma : torch.Tensor of shape (m,), float32
    """
    import torch

    m = logits.shape[0]
    logp = torch.empty(m, dtype=torch.float32, device=logits.device)
    mu = torch.empty_like(logp)
    sigma = torch.empty_like(logp)
    for a in range(0, m, chunk_rows):
        b = min(m, a + chunk_rows)
        # two (rows, V) temporaries, the rest in place or fused (memory traffic is the cost here)
        lp = torch.log_softmax(logits[a:b].float(), dim=-1)
        logp[a:b] = lp.gather(1, targets[a:b, None]).squeeze(1)
        p = lp.exp()
        mean = torch.einsum("ij,ij->i", p, lp)
        lp.sub_(mean[:, None]).square_()
        mu[a:b] = mean
        sigma[a:b] = torch.einsum("ij,ij->i", p, lp).clamp_min(0).sqrt()
    return logp, mu, sigma


def distribution_stats_numpy(logprobs: np.ndarray):
    """``(mu, sigma)`` of each row's log-distribution under itself (the numpy reference).

    Parameters
    ----------
    logprobs : ndarray of shape (m, V)
        Normalised log-probabilities.

    Returns
    -------
    mu, sigma : ndarray of shape (m,)
    """
    lp = np.asarray(logprobs, np.float64)
    p = np.exp(lp)
    mu = (p * lp).sum(-1)
    sigma = np.sqrt(np.maximum((p * (lp - mu[:, None]) ** 2).sum(-1), 0.0))
    return mu, sigma


def _lowest_mean(x: np.ndarray, k: float) -> float:
    m = max(1, int(math.ceil(k * len(x))))
    return float(np.mean(np.partition(x, m - 1)[:m]))


def min_k_scores(logp: np.ndarray, mu: Optional[np.ndarray] = None, sigma: Optional[np.ndarray] = None,
                 k: float = DEFAULT_K) -> Dict[str, Optional[float]]:
    """Min-K%, Min-K%++ and perplexity of one text from its scored tokens.

    Parameters
    ----------
    logp : ndarray of shape (t,)
        log p of each scored token.
    mu, sigma : ndarray of shape (t,), optional
        The distribution's mean and std of log p at each token; without them Min-K%++ is None.
    k : float
        Fraction of tokens averaged (the lowest ``ceil(k * t)``).

    Returns
    -------
    dict with ``min_k``, ``min_k_pp``, ``perplexity`` (None when the text has no scored token)
        and ``n_tokens``.
    """
    logp = np.asarray(logp, np.float64)
    if not len(logp):
        return {"min_k": None, "min_k_pp": None, "perplexity": None, "n_tokens": 0}
    out: Dict[str, Optional[float]] = {
        "min_k": _lowest_mean(logp, k),
        "min_k_pp": None,
        "perplexity": float(math.exp(-float(np.mean(logp)))),
        "n_tokens": int(len(logp)),
    }
    if mu is not None and sigma is not None:
        mu, sigma = np.asarray(mu, np.float64), np.asarray(sigma, np.float64)
        z = np.where(sigma > 0, (logp - mu) / np.where(sigma > 0, sigma, 1.0), 0.0)
        out["min_k_pp"] = _lowest_mean(z, k)
    return out


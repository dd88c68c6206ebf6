"""The published rule for "temporal information does not matter" (one place, read by every output).

Zhang, Batista & Kanhere (PAKDD 2025): over R runs, with ``Acc_ori`` / ``Acc_per`` the mean
accuracies on the original and the time-permuted data and ``Std_ori`` / ``Std_per`` their standard
deviations over runs (population std), temporal information does **not** matter significantly when

    Acc_per >= Acc_ori   or   |Acc_ori - Acc_per| <= Std_ori + Std_per

and the relaxed rule allows twice the summed std. ``time_matters`` is the negation of the first,
``time_matters_2std`` of the relaxed one.
"""
from __future__ import annotations

from typing import Dict, Sequence

import numpy as np

__all__ = ["RULE", "RULE_2STD", "does_not_matter", "summarise_runs"]

RULE = "time does not matter when Acc_per >= Acc_ori or |Acc_ori - Acc_per| <= Std_ori + Std_per"
RULE_2STD = "relaxed: |Acc_ori - Acc_per| <= 2 (Std_ori + Std_per)"


def does_not_matter(mean_ori: float, std_ori: float, mean_per: float, std_per: float, k: float = 1.0) -> bool:
    """The paper's rule with ``k`` times the summed std (k=1: the rule; k=2: the relaxed rule)."""
    return bool(mean_per >= mean_ori or abs(mean_ori - mean_per) <= k * (std_ori + std_per))


def summarise_runs(acc_original: Sequence[float], acc_permuted: Sequence[float]) -> Dict[str, object]:
    """Means, population stds and both verdicts of paired per-run accuracies.

    Parameters
    ----------
    acc_original, acc_permuted : sequence of float, length runs

    Returns
    -------
    dict
        ``acc_original_mean, acc_original_std, acc_permuted_mean, acc_permuted_std, runs,
        time_matters, time_matters_2std``.
    """
    ori = np.asarray(acc_original, dtype=np.float64)
    per = np.asarray(acc_permuted, dtype=np.float64)
    if ori.shape != per.shape or ori.ndim != 1 or len(ori) == 0:
        raise ValueError(f"need paired per-run accuracies, got shapes {ori.shape} and {per.shape}")
    m_o, s_o, m_p, s_p = float(ori.mean()), float(ori.std()), float(per.mean()), float(per.std())
    return {
        "acc_original_mean": m_o, "acc_original_std": s_o,
        "acc_permuted_mean": m_p, "acc_permuted_std": s_p,
        "runs": int(len(ori)),
        "time_matters": not does_not_matter(m_o, s_o, m_p, s_p, 1.0),
        "time_matters_2std": not does_not_matter(m_o, s_o, m_p, s_p, 2.0),
    }

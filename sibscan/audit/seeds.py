"""Several runs (seeds): every metric as mean ± std over runs, the number of runs stated.

The standard deviation is the sample one (``ddof=1``), the spread a reader should expect from
another seed; with one run it is None, never 0. Fewer than :data:`MIN_RUNS` runs is a warning.
"""
from __future__ import annotations

from typing import Dict, Optional

import numpy as np

from .metrics import METRICS

__all__ = ["MIN_RUNS", "aggregate_runs", "runs_warning"]

#: fewer runs than this draws a warning
MIN_RUNS = 3


def aggregate_runs(per_run: Dict[str, dict]) -> dict:
    """Join per-run metrics into mean ± std.

    Parameters
    ----------
    per_run : dict of run name to :func:`~sibscan.audit.metrics.compute_metrics` output

    Returns
    -------
    dict
        ``{metric_id: {name, formula, mean, std, n_runs, values: {run: value}, n}}``; ``mean`` and
        ``std`` are None when the metric is undefined in some run (``note`` says where). With one run,
        ``accuracy`` keeps its 95 % interval as ``ci``.
    """
    runs = list(per_run)
    out: dict = {}
    for mid in next(iter(per_run.values()), {}):
        recs = {r: per_run[r][mid] for r in runs}
        values = {r: rec["value"] for r, rec in recs.items()}
        agg = {"name": METRICS[mid].name, "formula": METRICS[mid].formula, "n_runs": len(runs),
               "values": values, "n": {r: rec["n"] for r, rec in recs.items()}}
        undefined = [r for r, v in values.items() if v is None]
        if undefined:
            agg.update(mean=None, std=None,
                       note="; ".join(f"{r}: {recs[r].get('note', 'undefined')}" for r in undefined))
        else:
            arr = np.array(list(values.values()), dtype=np.float64)
            agg.update(mean=float(arr.mean()), std=float(arr.std(ddof=1)) if len(arr) > 1 else None)
        if len(runs) == 1 and "ci" in recs[runs[0]]:
            agg["ci"] = recs[runs[0]]["ci"]
        out[mid] = agg
    return out


def runs_warning(n_runs: int) -> Optional[str]:
    """The warning for too few runs, or None."""
    if n_runs >= MIN_RUNS:
        return None
    return (f"only {n_runs} run{'s' if n_runs != 1 else ''} (seed{'s' if n_runs != 1 else ''}): report mean ± std "
            f"over at least {MIN_RUNS} seeds — one run's score does not show how much another seed would move it")

"""How often each calibration rule's cutoff sits under pairs whose true P(same) is below one half.

    python -m benchmarks.cutoff_rule_sim                 # 1,000 draws per setting (about a minute)
    python -m benchmarks.cutoff_rule_sim --quick         # 20 draws, for the tests

A simulated labeller answers ``n`` pairs whose scores are uniform on [0, 1]; the true
``P(same | score)`` is logistic with its half-way point at 0.5 and width ``w``.  Each draw is fitted
by the current rule (:data:`sibscan.calibration.fit.RULE`: isotonic P(same) read at its lower bound per
run of answers) and by the earlier point-estimate rule (the same curve read at its point estimate,
the midpoint convention unchanged).  Reported per rule and setting, over the draws that give a
cutoff: the share whose *first labelled pair at or above the cutoff* has true P(same) < 0.5 (the
rule flagged a pair more likely different than same), the share where the true P(same) at the
cutoff itself is < 0.5, and the share of draws with no cutoff.  The README's calibration section
quotes it.  Results: ``benchmarks/results/cutoff_rule_sim.json``.
"""
from __future__ import annotations

import argparse
from typing import Dict, List, Optional, Sequence

import numpy as np

from benchmarks._common import print_table, write_results

WIDTHS = (0.02, 0.05, 0.1, 0.2)
SIZES = (60, 200)


def true_p(s: np.ndarray, width: float) -> np.ndarray:
    """The simulated labeller's P(same | score)."""
    return 1.0 / (1.0 + np.exp(-(np.asarray(s, np.float64) - 0.5) / width))


def one_setting(n: int, width: float, draws: int, seed: int) -> Dict[str, Dict[str, object]]:
    """Both rules over ``draws`` simulated label sets of ``n`` pairs."""
    from sibscan.calibration.fit import Curve, find_cutoff, fit_curve

    rng = np.random.default_rng(seed)
    out: Dict[str, Dict[str, List[bool]]] = {r: {"first": [], "at": [], "none": []} for r in ("bound", "point")}
    for _ in range(draws):
        s = rng.uniform(0.0, 1.0, n)
        same = (rng.uniform(0.0, 1.0, n) < true_p(s, width)).astype(np.float64)
        curve = fit_curve(s, same)
        cuts = {"bound": find_cutoff(curve), "point": find_cutoff(Curve(curve.x, curve.p))}
        for rule, c in cuts.items():
            rec = out[rule]
            rec["none"].append(c is None)
            if c is None:
                continue
            above = np.sort(s[s >= c])
            rec["first"].append(bool(len(above)) and bool(true_p(above[0], width) < 0.5))
            rec["at"].append(bool(true_p(c, width) < 0.5))
    return {rule: {"draws": draws,
                   "with_cutoff": int(draws - sum(rec["none"])),
                   "share_no_cutoff": float(np.mean(rec["none"])),
                   "share_first_flagged_below_half": _share(rec["first"]),
                   "share_cutoff_below_half": _share(rec["at"])}
            for rule, rec in out.items()}


def _share(flags: List[bool]) -> Optional[float]:
    return float(np.mean(flags)) if flags else None  # no draw gave a cutoff: not assessed


def main(argv: Optional[Sequence[str]] = None) -> Dict[str, object]:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.cutoff_rule_sim", description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="20 draws per setting")
    ap.add_argument("--draws", type=int, default=1000, help="simulated label sets per setting")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--name", default=None, help="results file stem (default cutoff_rule_sim[_quick])")
    args = ap.parse_args(argv)
    draws = 20 if args.quick else args.draws
    rows = []
    for n in SIZES:
        for w in WIDTHS:
            res = one_setting(n, w, draws, args.seed + int(n * 1000 + w * 1000))
            for rule, r in res.items():
                rows.append({"n_labels": n, "width": w, "rule": rule, **r})
    from sibscan.verdict.cutoffrule import POINT_RULE, RULE

    payload = {"quick": args.quick, "seed": args.seed, "rules": {"bound": RULE, "point": POINT_RULE}, "rows": rows}
    write_results(args.name or ("cutoff_rule_sim_quick" if args.quick else "cutoff_rule_sim"), payload)
    print_table(rows, ["n_labels", "width", "rule", "with_cutoff", "share_no_cutoff",
                       "share_first_flagged_below_half", "share_cutoff_below_half"])
    return payload


if __name__ == "__main__":
    main()

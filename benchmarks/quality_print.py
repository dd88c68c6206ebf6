"""The tables :mod:`benchmarks.quality` prints for a set: every method at its cutoff, recall and AUC per
transform, the true source among the candidates, and verification's time beside embedding's.
"""
from __future__ import annotations

from typing import List

from benchmarks._common import print_table
from benchmarks.quality_pairs import NOT_ASSESSED


def _modes(entry: dict) -> List[str]:
    return [m for m in entry if m == "embedding" or m.startswith("verified")]


def _mode_name(verifier: str, mode: str) -> str:
    """How a method's name ends for ``mode``: nothing (embedding), " + " and the verifier's name."""
    if mode == "embedding":
        return ""
    return " + " + (verifier if mode == "verified" else mode.split(":", 1)[1])


def _print_set(out: dict, verifier: str) -> None:
    """The tables of one set's results ``out``; ``verifier`` names the modality's current verifier."""
    rows = []
    shown = lambda v: NOT_ASSESSED if v is None else v  # noqa: E731
    for name, entry in out["encoders"].items():
        for mode in _modes(entry):
            r = entry[mode]
            m = {k: shown(v) for k, v in r["metrics"].items()}
            cut = r["calibration"]["cutoff"]
            rows.append({"method": f"{name}{_mode_name(verifier, mode)}",
                         "cutoff": "none (refused)" if cut is None else f"calibrated {cut:.4f}",
                         "precision": m["precision"], "recall": m["recall"], "P@1%": m["precision_at_1pct"],
                         "P@1% lo": m["precision_at_1pct_lower95"], "AUC": m["auc"],
                         "R@P95": m["recall_at_p95"], "flagged": m["flagged"],
                         "src in cand": r["source_in_candidates"], "hard flagged": shown(r["hard_negatives_flagged"]),
                         "hard above cutoff": shown(r.get("hard_negatives_above_cutoff"))})
    for name, m in out["fixed_defaults"].items():
        rows.append({"method": name, "cutoff": "fixed default", "precision": m["precision"], "recall": m["recall"],
                     "P@1%": m["precision_at_1pct"], "P@1% lo": m["precision_at_1pct_lower95"], "AUC": m.get("auc", ""),
                     "R@P95": m.get("recall_at_p95", ""), "flagged": m["flagged"]})
    print_table(rows)
    d = out["difficulty"]
    print(f"difficulty under {out['default_encoder']}: best negative {d['best_negative']:.4f} > random-pair median "
          f"{d['random_median']:.4f}; {d['share_negatives_above_random_q99']:.0%} of clean items score above the "
          f"random q99 {d['random_q99']:.4f}")
    rows = []
    for name, entry in out["encoders"].items():
        for mode in _modes(entry):
            row = {"method": f"{name}{_mode_name(verifier, mode)}"}
            for t, v in entry[mode]["per_transform"].items():
                row[t] = f"{NOT_ASSESSED if v['recall'] is None else format(v['recall'], '.2f')} / {v['auc']:.2f}"
            rows.append(row)
    print("recall at the calibrated cutoff / ROC AUC, per transform:")
    print_table(rows)
    _print_candidates(out)
    shares = [(what, out.get(key)) for what, key in (("encoder's top-k", "time_share"), ("union", "time_share_union"),
                                                      ("cascade", "time_share_cascade"))]
    print(f"verification beside embedding ({out['default_encoder']}: {out['time_share']['encode_seconds']:.1f} s):")
    print_table([{"candidates": what, "pairs": t["candidate_pairs"],
                  **{f"{n} s (share)": f"{v['seconds']:.1f} ({v['share_of_scan']:.0%})"
                     for n, v in t["verifiers"].items()}}
                 for what, t in shares if t])


def _print_candidates(out: dict) -> None:
    cr = out.get("candidate_recall")
    if cr:
        print(f"true source among the candidates before verification (a view alone: its top-{cr['k']}; a union: the "
              f"encoder's top-{cr['k']} and each extra view's top-{cr['k_view']}), all / per transform:")
        print_table([{"view": name, "all": r["all"], "per item": r["candidates_per_item"],
                      **{t: f"{v:.2f}" for t, v in r["per_transform"].items()}}
                     for name, r in [*cr["views"].items(), *((f"union {n}", r) for n, r in cr["unions"].items())]])

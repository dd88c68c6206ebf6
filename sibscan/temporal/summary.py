"""Summaries of an archive run: the per-dataset verdicts, the shares, the Wilcoxon tests and ranks.

Permutation mode: per dataset and classifier, :func:`sibscan.temporal.verdict.summarise_runs`
over the runs, and per classifier the share of datasets where temporal information does not
matter (1-std and 2-std rules) — over datasets with every run done; the others are listed as
incomplete, skipped ones with their reason.

Augment mode: per classifier and padding level, the mean accuracy over runs on each dataset;
across datasets the one-sided Wilcoxon signed-rank p-value of the drop (H1: augmented < original,
``scipy.stats.wilcoxon(aug, orig, alternative="less")``, zero differences dropped) and each
classifier's mean rank per level (rank 1 = most accurate, ties share the mean rank; datasets where
every classifier finished).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List

import numpy as np

from ..atomic import write_json, write_text
from .verdict import RULE, RULE_2STD, summarise_runs
from .section import archive_html, archive_markdown

__all__ = ["summarise", "write_summary"]


def _collect(units: List[Dict[str, Any]]):
    by_ds: Dict[str, List[Dict[str, Any]]] = {}
    for u in units:
        by_ds.setdefault(u["dataset"], []).append(u)
    return by_ds


def summarise(units: List[Dict[str, Any]], config, root: str = "") -> Dict[str, Any]:
    """Turn the per-unit records into the archive summary (the ``temporal.json`` written beside them)."""
    by_ds = _collect(units)
    classifiers = [c.name for c in config.classifiers]
    skipped = {name: us[0]["skipped"] for name, us in by_ds.items() if any("skipped" in u for u in us)}
    complete = {name: sorted(us, key=lambda u: u["run"]) for name, us in by_ds.items()
                if name not in skipped and len(us) == config.runs}
    incomplete = sorted(n for n in by_ds if n not in skipped and n not in complete)
    out: Dict[str, Any] = {
        "mode": config.mode, "root": root, "config": config.identity(), "runs": config.runs,
        "classifiers": classifiers, "n_datasets": len(by_ds), "n_complete": len(complete),
        "skipped": [{"dataset": k, "reason": v} for k, v in sorted(skipped.items())],
        "incomplete": incomplete,
    }
    if config.mode == "permutation":
        out.update(_permutation(complete, classifiers))
    else:
        out.update(_augment(complete, classifiers, config.variants))
    return out


def _permutation(complete, classifiers) -> Dict[str, Any]:
    rows: List[Dict[str, Any]] = []
    shares: Dict[str, Dict[str, Any]] = {}
    for name, us in sorted(complete.items()):
        for clf in classifiers:
            ori = [u["accuracy"][clf]["original"] for u in us]
            per = [u["accuracy"][clf]["permuted"] for u in us]
            rows.append({"dataset": name, "classifier": clf, **summarise_runs(ori, per),
                         "acc_original": ori, "acc_permuted": per,
                         "normalisation": us[0]["normalisation"]["applied"],
                         "n_train": us[0]["shape"]["n_train"], "n_test": us[0]["shape"]["n_test"],
                         "length": us[0]["shape"]["length"],
                         "seconds": float(sum(u["seconds"]["total"] for u in us))})
    for clf in classifiers:
        mine = [r for r in rows if r["classifier"] == clf]
        n = len(mine)
        k1 = sum(not r["time_matters"] for r in mine)
        k2 = sum(not r["time_matters_2std"] for r in mine)
        shares[clf] = {"n": n, "does_not_matter": k1, "does_not_matter_2std": k2,
                       "share": k1 / n if n else None, "share_2std": k2 / n if n else None}
    return {"rule": RULE, "rule_2std": RULE_2STD, "datasets": rows, "shares": shares}


def _augment(complete, classifiers, variants) -> Dict[str, Any]:
    from scipy.stats import rankdata, wilcoxon

    names = sorted(complete)
    levels = variants[1:]
    # mean accuracy over runs: acc[clf][variant] -> array over datasets
    acc = {clf: {v: np.array([np.mean([u["accuracy"][clf][v] for u in complete[d]]) for d in names])
                 for v in variants} for clf in classifiers}
    rows = [{"dataset": d, "classifier": clf, **{v: float(acc[clf][v][i]) for v in variants}}
            for i, d in enumerate(names) for clf in classifiers]
    tests: Dict[str, Dict[str, Any]] = {}
    for clf in classifiers:
        tests[clf] = {}
        for v in levels:
            diff = acc[clf][v] - acc[clf]["original"]
            rec: Dict[str, Any] = {"n": len(names), "mean_drop": float(-diff.mean()) if len(names) else None,
                                   "n_worse": int((diff < 0).sum()), "n_better": int((diff > 0).sum())}
            if np.count_nonzero(diff) == 0:
                rec["p_value"] = None
                rec["note"] = "no dataset changed accuracy: not assessed"
            else:
                rec["p_value"] = float(wilcoxon(acc[clf][v], acc[clf]["original"], alternative="less").pvalue)
            tests[clf][v] = rec
    ranks: Dict[str, Dict[str, Any]] = {clf: {} for clf in classifiers}
    for v in variants:
        if not names:
            break
        table = np.stack([acc[clf][v] for clf in classifiers], axis=1)  # (datasets, classifiers)
        r = np.apply_along_axis(lambda row: rankdata(-row), 1, table)
        for j, clf in enumerate(classifiers):
            ranks[clf][v] = float(r[:, j].mean())
    return {"levels": levels, "variants": variants, "datasets": rows, "wilcoxon": tests, "mean_rank": ranks}


def write_summary(out_dir: str | Path, summary: Dict[str, Any]) -> Dict[str, Path]:
    """Write ``temporal.json``, ``temporal.md`` and ``temporal.html`` into ``out_dir``."""
    out_dir = Path(out_dir)
    return {"json": write_json(out_dir / "temporal.json", summary),
            "md": write_text(out_dir / "temporal.md", archive_markdown(summary)),
            "html": write_text(out_dir / "temporal.html", archive_html(summary))}

"""The audit's result: one record per example, a summary, and the evidence behind each number.

``to_dict()`` is the JSON contract::

    {"examples": [{"example_id", "scorable", "n_words", "overlap_fraction", "longest_match_tokens",
                   "best_source", "matched_sources", "per_source": {source: {"overlap_fraction",
                   "longest_match_tokens"}}, "z", "flagged", "reasons",
                   + "min_k", "min_k_pp", "perplexity", "n_tokens", "min_k_pp_support" with a model,
                   + "guided_f1", "guided_precision", "guided_recall" with a completer}, ...],
     "unscorable": [...], "skipped": [...], "summary": {...}, "sources": {...},
     "methods": {...}, "evaluation": {...} (with labels), "config": {...}}

``overlap_fraction`` and ``longest_match_tokens`` are None for an example shorter than ``n`` words
(``scorable`` False) or when no corpus was given; ``flagged`` is None when no method could score
the example.  Rates are fractions.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional

import numpy as np

from .._version import __version__
from ..stats import finite_or_none, rate_record
from .config import ContaminationConfig

__all__ = ["ContaminationResult"]


@dataclass
class ContaminationResult:
    examples: object
    config: ContaminationConfig
    indexes: dict
    named: List[str]
    thresholds: dict
    overlaps: Optional[list]
    logprob: Optional[Dict[str, dict]]
    guided: Optional[Dict[str, dict]]
    z: Dict[str, np.ndarray]
    flagged: List[Optional[bool]]
    reasons: List[List[str]]
    evaluation: Optional[dict]
    probes: Dict[str, str]

    def records(self) -> List[dict]:
        """One JSON-ready dict per example (see the module docstring)."""
        out = []
        for i, eid in enumerate(self.examples.ids):
            rec: Dict[str, object] = {"example_id": eid}
            o = None if self.overlaps is None else self.overlaps[i]
            best = None if o is None else o.best
            rec["scorable"] = bool(o.scorable) if o is not None else (self.flagged[i] is not None)
            rec["n_words"] = None if o is None else o.n_words
            rec["overlap_fraction"] = None if best is None else best.overlap_fraction
            rec["longest_match_tokens"] = None if best is None else best.longest_match_tokens
            named = self.named and o is not None
            rec["best_source"] = o.best_source if named else None
            rec["matched_sources"] = [s for s in o.matched_sources if s in self.named] if named else []
            rec["per_source"] = ({s: m.to_dict() for s, m in o.per_source.items() if s in self.named}
                                 if named else {})
            if self.logprob is not None:
                rec.update(self.logprob[eid])
            if self.guided is not None:
                rec.update({k: v for k, v in self.guided[eid].items() if k != "continuation"})
            rec["z"] = finite_or_none(self.z["combined"][i])
            rec["flagged"] = self.flagged[i]
            rec["reasons"] = self.reasons[i]
            out.append(rec)
        return out

    def summary(self) -> dict:
        verdict = np.array([f for f in self.flagged if f is not None], bool)
        by_reason: Dict[str, int] = {}
        for why in self.reasons:
            for r in why:
                by_reason[r] = by_reason.get(r, 0) + 1
        unscorable = [] if self.overlaps is None else [
            self.examples.ids[i] for i, o in enumerate(self.overlaps) if not o.scorable]
        return {
            "n_examples": len(self.examples.ids),
            "n_unscorable": len(unscorable),
            "flagged": rate_record(verdict),  # of the examples with a verdict; rate is a fraction
            "flags_by_reason": dict(sorted(by_reason.items())),
            "n_skipped": len(self.examples.skipped),
        }

    def to_dict(self) -> dict:
        ev = None
        if self.evaluation is not None:
            ev = dict(self.evaluation)
            op = ev.pop("operating_point")
            ev["flags"] = None if op is None else op.to_dict(self.config.prevalence, len(self.examples.ids))
        sources = {}
        for name, idx in self.indexes.items():
            m = idx.manifest
            th = self.thresholds.get(name)
            sources[name] = {
                "index": str(idx.path),
                "n": idx.n, "n_docs": m["n_docs"], "n_ngrams": m["n_ngrams"], "n_stored": m["n_stored"],
                "skipped": m["skipped"],
                "overlap_threshold": th.threshold if th else self.config.overlap_floor,
                "run_threshold": th.run_threshold if th else self.config.run_floor,
                "threshold_from": "controls" if th else "overlap_floor",
                "controls": th.to_dict() if th else None,
            }
        return {
            "sibscan_version": __version__,
            "examples": self.records(),
            "unscorable": [] if self.overlaps is None else [
                self.examples.ids[i] for i, o in enumerate(self.overlaps) if not o.scorable],
            "skipped": [s.to_dict() for s in self.examples.skipped],
            "summary": self.summary(),
            "sources": sources,
            "methods": {"ran": sorted(k for k in self.z if k != "combined"), "probes": self.probes},
            "evaluation": ev,
            "config": self.config.to_dict(),
        }

    def _threshold_lines(self) -> List[str]:
        """Each source's flagging thresholds and where they came from (controls, or the floors)."""
        out = []
        for name in self.indexes:
            th = self.thresholds.get(name)
            if th is None:
                out.append(f"source {name}: flagged at overlap >= {self.config.overlap_floor:g} or a run of >= "
                           f"{self.config.run_floor} words (the floors: no --control texts)")
                continue
            well = "well estimated" if th.is_well_estimated else f"NOT well estimated: {th.n_needed} needed"
            out.append(f"source {name}: flagged at overlap > {th.threshold:.3f} or a run of > {th.run_threshold} "
                       f"words, the {th.percentile:g}th percentile of {th.n_controls} control texts ({well})")
        return out

    def _evaluation_lines(self) -> List[str]:
        """With --labels: each method's AUC and the flags' recall and false-positive rate, with their denominators."""
        d = self.to_dict().get("evaluation")
        if not d:
            return []
        auc = ", ".join(f"{m} {'n/a' if a is None else format(a, '.3f')}" for m, a in d["auc"].items())
        out = [f"labelled examples: {d['n_labelled']} ({d['n_contaminated']} contaminated); AUC: "
               f"{auc or 'no method ran'}"]
        fl = d.get("flags")
        left = d.get("n_without_verdict", 0)
        unscored = f"; {left} labelled example(s) without a verdict (shorter than n words) left out" if left else ""
        if fl is None:
            out.append("flags on labelled examples: not assessed (the labelled examples with a verdict lack a "
                       f"contaminated or a clean one){unscored}")
            return out
        line = (f"flags on labelled examples: recall {fl['tpr']:.3f} (of {fl['n_positive']} contaminated), "
                f"false-positive rate {fl['fpr']:.3f} (of {fl['n_negative']} clean), over the examples with a verdict"
                f"{unscored}")
        if "prevalence" in fl:
            prec = fl.get("precision_at_prevalence")
            line += (f"; at prevalence {fl['prevalence']:.1%}: precision "
                     f"{'n/a' if prec is None else format(prec, '.3f')}, expected review queue "
                     f"{fl['review_queue_size']:.1f} of {len(self.examples.ids)}")
        out.append(line)
        return out

    def table(self, limit: Optional[int] = None) -> str:
        """Terminal table: example, overlap, run, z, flag (flagged first, then by z)."""
        recs = self.records()
        order = sorted(range(len(recs)), key=lambda i: (not recs[i]["flagged"], -(recs[i]["z"] or -np.inf)))
        if limit is not None:
            order = order[:limit]
        cols = ["example", "overlap", "run", "z", "flag"]
        if self.named:
            cols.insert(3, "source")
        rows = []
        for i in order:
            r = recs[i]
            flag = {True: "FLAG " + ",".join(r["reasons"]), False: "-", None: "n/a"}[r["flagged"]]
            row = [str(r["example_id"]),
                   "n/a" if r["overlap_fraction"] is None else f"{r['overlap_fraction']:.2f}",
                   "n/a" if r["longest_match_tokens"] is None else str(r["longest_match_tokens"]),
                   "n/a" if r["z"] is None else f"{r['z']:.1f}", flag]
            if self.named:
                row.insert(3, r["best_source"] or "—")
            rows.append(row)
        widths = [max(len(c), *(len(r[j]) for r in rows)) if rows else len(c) for j, c in enumerate(cols)]
        lines = ["  ".join(c.ljust(w) for c, w in zip(cols, widths))]
        lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in rows]
        s = self.summary()
        f = s["flagged"]
        frac = "not assessed" if f["rate"] is None else f"{f['rate']:.1%}"
        lines.append(f"{f['count']} of {f['n']} examples flagged ({frac}); "
                     f"{s['n_unscorable']} shorter than n={self.config.n} words (unscorable, listed, not clean); "
                     f"{s['n_skipped']} skipped")
        lines += self._threshold_lines() + self._evaluation_lines()
        for name, idx in self.indexes.items():
            bad = idx.manifest["skipped"]
            if bad:
                lines.append(f"source {name}: {len(bad)} corpus file(s)/line(s) skipped, first {bad[0]['path']} at "
                             f"byte {bad[0]['offset']}: {bad[0]['reason']} (all in --json)")
        return "\n".join(lines)

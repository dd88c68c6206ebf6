"""The per-pair scores of a :mod:`benchmarks.quality` run, and its calibration simulated again from them.

A quality run spends minutes verifying candidates; the calibration it simulates (a draw of 60
pairs, oracle labels, :func:`sibscan.calibration.fit.fit`) takes a fraction of a second.  Every run
writes beside ``NAME.json`` the scores the calibration saw (``NAME_pairs.json.gz``: per set the planted
truth, per encoder and mode each test item's best score, its nearest train item, its next pair
(``score2``/``nb2``: the best other candidate, what decides it when its nearest pair is labelled
"different"; runs since labels decide pairs) and the verified random pairs), so a change to the
calibration can be measured on the same scores without verifying again::

    python -m benchmarks.quality --calibration-only benchmarks/results/quality_crops_14c_pairs.json.gz

prints, per set and method, the cutoff, the hard negatives above it and flagged once the simulated
labels decide the pairs they answer (:mod:`sibscan.verdict.pairdecision`), and the recall there, before (as
recorded in ``NAME.json``) and now, and writes them to ``NAME_recalibrated.json`` (``--name`` to
choose).  With ``--write-back`` it also rewrites ``NAME.json`` where no verification is needed: a
method whose calibration now refuses a cutoff (its figures at the cutoff become None), and a method
whose cutoff stayed (its figures at the cutoff after the labels; :func:`write_back`).  A side file
written before next pairs were saved can be extended from a re-run with the same scores
(:func:`add_next_pairs`).  ``NAME.json`` and its side file hold their runs (one per seed and photo
split) under ``runs``, by the same key (:func:`run_key`; :func:`benchmarks._common.write_run`): every
function here replays each run of the side file against the run of ``NAME.json`` under its key.
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

from benchmarks._common import RUNS, finite, print_table, read_results, write_compact, write_run

__all__ = ["AT_CUTOFF", "NOT_ASSESSED", "PAIRS_SUFFIX", "POPULATION_KEY", "add_next_pairs", "calibration_only",
           "flag_counts", "flag_masks", "next_pair", "not_assessed", "population", "recalibrate_file", "run_key",
           "split_pairs", "take_labels", "truth", "write_back"]

#: how a run's side file ends (``NAME`` + this; written compact, gzipped)
PAIRS_SUFFIX = "_pairs.json.gz"
#: where :func:`benchmarks.quality.evaluate` leaves the scores it calibrated on (moved out by :func:`split_pairs`)
POPULATION_KEY = "_population"
#: the figures of an evaluation that exist only at a cutoff (``metrics`` keys; per transform: recall, precision at 1 %)
AT_CUTOFF = ("recall", "precision", "fpr", "fpr_upper95", "precision_at_1pct", "precision_at_1pct_lower95", "flagged")
#: how tables print a figure that was not assessed (None in the results)
NOT_ASSESSED = "not assessed"


def not_assessed(entry: dict) -> dict:
    """``entry`` (an evaluation of :func:`benchmarks.quality.evaluate`) with every figure at the cutoff set
    to None, in place: its calibration gave no cutoff, as a user would get none.  The threshold-free
    figures (AUC, recall at precision 0.95, source among the candidates) stay."""
    entry["hard_negatives_flagged"] = entry["featureless_flagged"] = None
    entry["hard_negatives_above_cutoff"] = entry["featureless_above_cutoff"] = entry["above_cutoff"] = None
    entry["metrics"].update({k: None for k in AT_CUTOFF})
    for t in (entry.get("per_transform") or {}).values():
        t.update(recall=None, precision_at_1pct=None)
    return entry


def next_pair(scores: np.ndarray, idx: np.ndarray, nb: np.ndarray) -> tuple:
    """Each item's best pair among its candidates other than its nearest train item ``nb``.

    Parameters
    ----------
    scores, idx : ndarray of shape (n_test, c)
        Each candidate's deciding score and train item (a row may repeat a train item).
    nb : ndarray of shape (n_test,)

    Returns
    -------
    (ndarray of shape (n_test,) float64, ndarray of shape (n_test,) int64)
        The score (NaN where no other candidate) and train item (-1 there).
    """
    other = np.where(np.asarray(idx) == np.asarray(nb)[:, None], -np.inf, np.asarray(scores, np.float64))
    j = np.argmax(other, axis=1)
    rows = np.arange(len(other))
    score2, nb2 = other[rows, j], np.asarray(idx, np.int64)[rows, j]
    none = ~np.isfinite(score2)
    return np.where(none, np.nan, score2), np.where(none, -1, nb2)


def population(score: np.ndarray, nb: np.ndarray, random_scores: np.ndarray, score2: Optional[np.ndarray] = None,
               nb2: Optional[np.ndarray] = None) -> dict:
    """What one evaluation calibrated on, as JSON lists; scores to 9 significant digits (a float32's
    precision, which is what the verifiers give: a cutoff, a midpoint between two scores, flags the same).
    ``score2``/``nb2`` (:func:`next_pair`): each item's next pair, what decides it when its nearest
    pair is labelled "different" (side files written before them lack these keys)."""
    digits = lambda a: [float(f"{v:.9g}") for v in np.asarray(a, np.float64)]  # noqa: E731
    out = {"score": digits(score), "nb": [int(v) for v in nb], "random_scores": digits(random_scores)}
    if score2 is not None:
        out.update(score2=[None if not np.isfinite(v) else v for v in digits(score2)], nb2=[int(v) for v in nb2])
    return out


def truth(ps, featureless: np.ndarray) -> dict:
    """What the side file needs to count flagged items again: a planted set's truth and its items' labels."""
    labels = lambda items: None if items.labels is None else [str(v) for v in items.labels]  # noqa: E731
    return {"source": ps.source.tolist(), "hard": ps.hard.tolist(),
            "featureless": np.asarray(featureless, bool).tolist(),
            "transform": ps.transform.tolist(), "test_ids": [str(v) for v in ps.test.ids],
            "test_labels": labels(ps.test), "train_labels": labels(ps.train)}


#: the counts :func:`flag_counts` gives after the labels; each also by score alone (:func:`_above`)
_COUNTS = ("hard_negatives_flagged", "featureless_flagged", "recall", "precision", "flagged")


def _above(key: str) -> str:
    """The by-score name of a count: ``hard_negatives_flagged`` -> ``hard_negatives_above_cutoff``."""
    return key.replace("_flagged", "") + "_above_cutoff"


def take_labels(cal: dict) -> tuple:
    """Take out of ``cal`` (:func:`benchmarks.quality_metrics.calibrate`'s result) the simulated answers:
    ``(rows, same)``, the items whose nearest pair was labelled and the answers."""
    return cal.pop("_labelled", (np.zeros(0, np.int64), np.zeros(0, bool)))


def flag_masks(score: np.ndarray, cutoff: Optional[float], correct: np.ndarray, labelled: tuple,
               score2: Optional[np.ndarray] = None, correct2: Optional[np.ndarray] = None) -> dict:
    """Which items a user sees flagged after the simulated labels, and which the scores alone flag.

    Each item has its nearest pair (``score``; labelled where the draw took it) and, where known, its
    next pair (``score2``, never drawn: the draw is of nearest pairs).  The pairs are decided by
    :func:`sibscan.verdict.pairdecision.flag_items`, the rule every output of a scan counts by.

    Returns
    -------
    dict of ndarray of shape (n_test,), bool
        ``flagged`` (after the labels), ``hit`` (flagged by its source: ``correct`` for the nearest
        pair, ``correct2`` for the next), ``above`` (nearest score at or above the cutoff) and
        ``hit_above`` (``above & correct``).
    """
    from sibscan.verdict.pairdecision import DIFFERENT, SAME, flag_items

    score = np.asarray(score, np.float64)
    n = len(score)
    rows, same = labelled
    label = np.zeros(n, np.int8)
    label[np.asarray(rows, np.int64)] = np.where(np.asarray(same, bool), SAME, DIFFERENT)
    qi, sc, lab = np.arange(n), score, label
    if score2 is not None:
        qi, sc = np.r_[qi, np.arange(n)], np.r_[score, np.asarray(score2, np.float64)]
        lab = np.r_[label, np.zeros(n, np.int8)]
    fl = flag_items(qi, sc, lab, np.zeros(n, bool), cutoff)
    by_next = fl.row >= n
    hit = fl.flagged & np.where(by_next, False if correct2 is None else correct2, correct)
    return {"flagged": fl.flagged, "hit": hit, "above": fl.by_score, "hit_above": fl.by_score & correct}


def flag_counts(score: np.ndarray, cutoff: float, correct: np.ndarray, planted: np.ndarray, hard: np.ndarray,
                featureless: np.ndarray, labelled: Optional[tuple] = None, score2: Optional[np.ndarray] = None,
                correct2: Optional[np.ndarray] = None, masks: Optional[dict] = None) -> dict:
    """At ``cutoff``: hard negatives and featureless clean items flagged, recall, precision, items flagged,
    after the simulated labels (:func:`flag_masks`; what a user sees) and ``*_above_cutoff`` by score
    alone (all None when there is no cutoff: not assessed).  ``masks``: :func:`flag_masks`' result for
    these arguments where the caller has it (not computed again)."""
    if cutoff is None:
        return dict.fromkeys(k for key in _COUNTS for k in (key, _above(key)))
    if labelled is None:
        labelled = (np.zeros(0, np.int64), np.zeros(0, bool))
    m = masks if masks is not None else flag_masks(score, cutoff, correct, labelled, score2, correct2)
    out = {}
    for after_labels, flagged, hit in ((True, m["flagged"], m["hit"]), (False, m["above"], m["hit_above"])):
        name = (lambda k: k) if after_labels else _above  # noqa: E731
        out[name("hard_negatives_flagged")] = int((flagged & hard).sum())
        out[name("featureless_flagged")] = int((flagged & featureless & ~planted).sum())
        out[name("recall")] = float(hit.sum() / max(planted.sum(), 1))
        out[name("precision")] = float(hit.sum() / flagged.sum()) if flagged.any() else None
        out[name("flagged")] = int(flagged.sum())
    return out


def split_pairs(results: dict, truth: Dict[str, dict]) -> dict:
    """Move every evaluation's population out of ``results`` (in place) into the side file's form.

    ``truth``: per set name ``{source, hard, featureless, test_labels, train_labels}`` (lists).
    """
    out = {"sets": {}}
    for set_name, entry in results.items():
        methods = {}
        for enc, modes in (entry.get("encoders") or {}).items():
            for mode, r in modes.items():
                if isinstance(r, dict) and POPULATION_KEY in r:
                    methods[f"{enc}|{mode}"] = r.pop(POPULATION_KEY)
        if methods:
            out["sets"][set_name] = {**truth.get(set_name, {}), "methods": methods}
    return out


def _recorded(results: Optional[dict], set_name: str, method: str) -> Optional[dict]:
    if results is None:
        return None
    enc, mode = method.split("|", 1)
    try:
        r = results["sets"][set_name]["encoders"][enc][mode]
    except KeyError:
        return None
    return {"cutoff": r["calibration"]["cutoff"], "hard_negatives_flagged": r["hard_negatives_flagged"],
            "recall": r["metrics"]["recall"]}


def _recorded_path(pairs_path: Path) -> Path:
    """``NAME.json`` beside ``NAME_pairs.json.gz``: the run that wrote the side file."""
    return pairs_path.with_name(pairs_path.name[: -len(PAIRS_SUFFIX)] + ".json")


def run_key(seed: int, photos: str = "all") -> str:
    """A quality run's key in its ``NAME.json`` and side file: ``seedN``, or ``PHOTOS_seedN`` for the crop
    sets cut from one half of the photographs (``--photos``)."""
    return f"seed{seed}" if photos == "all" else f"{photos}_seed{seed}"


def _runs(path: Path, data: dict) -> Dict[str, dict]:
    """A results or side file's runs by key; a file of another form is refused."""
    runs = data.get(RUNS)
    if not isinstance(runs, dict) or not runs:
        raise SystemExit(f"{path}: no runs by key ('{RUNS}'); a benchmarks.quality run writes them")
    return runs


def _paired_runs(pairs_path: Path, side: dict, recorded: Optional[dict]) -> List[tuple]:
    """Each run of the side file with ``NAME.json``'s under the same key (None without that file):
    ``[(key, side run, recorded run)]``; a side run whose key ``NAME.json`` lacks is refused."""
    sides = _runs(pairs_path, side)
    if recorded is None:
        return [(k, v, None) for k, v in sides.items()]
    recs = _runs(_recorded_path(pairs_path), recorded)
    missing = [k for k in sides if k not in recs]
    if missing:
        raise SystemExit(f"{_recorded_path(pairs_path).name} holds no run {', '.join(missing)} of "
                         f"{pairs_path.name}; nothing done")
    return [(k, v, recs[k]) for k, v in sides.items()]


def calibration_only(pairs_path: Path, n_labels: Optional[int], seed: int, methods: Optional[List[str]] = None, *,
                     key: Optional[str] = None, side: Optional[dict] = None, recorded: Optional[dict] = None) -> dict:
    """Simulate the calibration again on the scores in ``pairs_path`` (see the module docstring).

    The labels drawn are the run's: the side file's ``n_labels``, else (side files written before it
    was recorded) ``NAME.json``'s, else ``n_labels``.  ``key``: the run replayed (:func:`run_key`; may
    be left out where the side file holds one).  ``side``, ``recorded``: that run of the side file and of
    ``NAME.json`` where the caller has read them already (read here otherwise).
    """
    from benchmarks.quality_metrics import calibrate

    pairs_path = Path(pairs_path)
    if side is None:
        runs = _runs(pairs_path, read_results(pairs_path))
        if key is None and len(runs) > 1:
            raise ValueError(f"{pairs_path} holds runs {', '.join(runs)}: pass key=, the one to replay")
        key = key if key is not None else next(iter(runs))
        if key not in runs:
            raise ValueError(f"{pairs_path} holds no run {key!r}; it holds {', '.join(runs)}")
        side = runs[key]
    if recorded is None:
        recorded_path = _recorded_path(pairs_path)
        if recorded_path.exists():
            recorded = _runs(recorded_path, read_results(recorded_path)).get(key)
    for source, value in (("side file", side.get("n_labels")), ("NAME.json", (recorded or {}).get("n_labels")),
                          ("the sizes of this run's flags", n_labels)):
        if value is not None:
            n_labels, n_labels_from = int(value), source
            break
    else:
        raise ValueError(f"{pairs_path} records no n_labels and none was given")
    out: Dict[str, dict] = {}
    for set_name, s in side["sets"].items():
        source = np.asarray(s["source"], np.int64)
        planted, hard = source >= 0, np.asarray(s["hard"], bool)
        featureless = np.asarray(s["featureless"], bool)
        for method, p in s["methods"].items():
            if methods and method not in methods:
                continue
            score, nb = np.asarray(p["score"], np.float64), np.asarray(p["nb"], np.int64)
            correct = planted & (nb == source)
            cal = calibrate(score, nb, correct, np.asarray(p["random_scores"], np.float64), n_labels, seed=seed)
            labelled = take_labels(cal)
            # each item's next pair, where the run saved it (side files before it: an item whose nearest pair
            # is labelled "different" then has no other pair, which may leave out a flag: next_pair "unknown")
            score2 = np.asarray(p["score2"], np.float64) if "score2" in p else None
            correct2 = planted & (np.asarray(p["nb2"], np.int64) == source) if "nb2" in p else None
            counts = flag_counts(score, cal["cutoff"], correct, planted, hard, featureless, labelled, score2, correct2)
            out.setdefault(set_name, {})[method] = {
                "before": _recorded(recorded, set_name, method),
                "now": {"calibration": cal, **counts, "next_pair": "saved" if score2 is not None else "unknown",
                        "labels": {"rows": [int(v) for v in labelled[0]], "same": [bool(v) for v in labelled[1]]}}}
    return {"pairs_file": str(pairs_path), "n_labels": n_labels, "n_labels_from": n_labels_from, "seed": seed,
            "sets": out}


def write_back(pairs_path: Path, outs: Dict[str, dict], *, side: Optional[dict] = None,
               rec: Optional[dict] = None) -> List[str]:
    """Write into the run's ``NAME.json`` what :func:`calibration_only` found, where no verification is needed.

    * A method whose calibration now gives no cutoff: that calibration, and None for every figure at
      the cutoff (:func:`not_assessed`); the threshold-free figures stay as the run measured them.
    * A method that kept its cutoff: its figures at the cutoff after the simulated labels (the one
      rule, :mod:`sibscan.verdict.pairdecision`) and by score alone (``*_above_cutoff``, ``above_cutoff``);
      needs the side file's next pairs (``score2``), and the figures by score alone must equal what the
      run recorded (before labels decided anything) or are refused.

    A cutoff that moved, in any run, needs a full run: refused, nothing written.  Returns the methods
    rewritten (``"KEY: SET METHOD"``) and records them, with the command, in their run's ``recalibrated``
    / ``labels_decide``.  ``outs``: :func:`calibration_only`'s result for each run of the side file, by
    key.  ``side``, ``rec``: the side file and ``NAME.json`` where the caller has read them already
    (``rec`` is rewritten in place).
    """
    import time

    from sibscan.atomic import write_json
    from sibscan.verdict.cutoffrule import RULE

    pairs_path = Path(pairs_path)
    recorded_path = _recorded_path(pairs_path)
    if not recorded_path.exists():
        raise SystemExit(f"--write-back needs the run's {recorded_path.name} beside {pairs_path.name}")
    if rec is None:
        rec = read_results(recorded_path)
    if side is None:
        side = read_results(pairs_path)
    runs = _paired_runs(pairs_path, side, rec)
    if sorted(outs) != sorted(k for k, _, _ in runs):
        raise ValueError(f"write_back: results for runs {', '.join(outs)}, the side file holds "
                         f"{', '.join(k for k, _, _ in runs)}")
    plans, moved = [], []
    for key, side_run, rec_run in runs:
        o, tag = outs[key], f"{key}: "
        refused, relabelled = [], []
        for set_name, methods in o["sets"].items():
            for method, r in methods.items():
                b, now = r["before"], r["now"]
                enc, mode = method.split("|", 1)
                entry = rec_run["sets"][set_name]["encoders"][enc][mode]
                if now["calibration"]["cutoff"] is None:
                    if b is None or b["cutoff"] is not None:  # refused already: written back before
                        refused.append((set_name, method, entry, now["calibration"]))
                elif b is None or b["cutoff"] is None or abs(b["cutoff"] - now["calibration"]["cutoff"]) > 1e-6:
                    moved.append(f"{tag}{set_name} {method} (cutoff)")
                else:
                    why = _relabel(entry, side_run["sets"][set_name], method, now)
                    if why:
                        moved.append(f"{tag}{set_name} {method} ({why})")
                    else:
                        relabelled.append(f"{set_name} {method}")
        plans.append((tag, rec_run, refused, relabelled))
    if moved:
        raise SystemExit(f"--write-back: refused for {', '.join(moved)}; their figures need a full run "
                         f"(python -m benchmarks.quality ... --name {recorded_path.stem}); nothing written")
    command = f"python -m benchmarks.quality --calibration-only {pairs_path.as_posix()} --write-back"
    rewritten = []
    for tag, rec_run, refused, relabelled in plans:
        done = []
        for set_name, method, entry, cal in refused:
            entry["calibration"] = cal
            not_assessed(entry)
            done.append(f"{set_name} {method}")
        if done:
            rec_run["recalibrated"] = {
                "command": command, "date": time.strftime("%Y-%m-%dT%H:%M:%S"), "rule": RULE, "methods": done,
                "note": "these methods' calibration gives no cutoff on the run's saved scores (a user gets none): "
                        "their figures at the cutoff are None (not assessed); every other field is as the run "
                        "wrote it"}
        if relabelled:
            rec_run["labels_decide"] = {
                "command": command, "date": time.strftime("%Y-%m-%dT%H:%M:%S"), "methods": relabelled,
                "note": "figures at the cutoff after the simulated labels decide the pairs they answer "
                        "(sibscan.verdict.pairdecision: 'different' never flagged, 'same' always, an item "
                        "falls back to its next pair): hard_negatives_flagged, featureless_flagged, metrics' "
                        "figures at the cutoff and per_transform recall; by score alone in "
                        "hard_negatives_above_cutoff, featureless_above_cutoff, above_cutoff (equal to what "
                        "the run recorded). Cutoffs, AUC, R@P95 and every other field are as the run wrote them"}
        rewritten += [tag + m for m in done + relabelled]
    if rewritten:
        write_json(recorded_path, finite(rec))
    return rewritten


def _relabel(entry: dict, truth_: dict, method: str, now: dict) -> Optional[str]:
    """Rewrite ``entry``'s figures at its (unchanged) cutoff after the labels in ``now``; returns why it
    cannot (the side file lacks next pairs, or the figures by score alone differ from the run's), else None."""
    from types import SimpleNamespace

    from benchmarks.quality_metrics import detection_metrics, per_transform

    p = truth_["methods"][method]
    if "score2" not in p:
        return "no next pairs in the side file"
    source = np.asarray(truth_["source"], np.int64)
    planted = source >= 0
    score, nb = np.asarray(p["score"], np.float64), np.asarray(p["nb"], np.int64)
    correct, correct2 = planted & (nb == source), planted & (np.asarray(p["nb2"], np.int64) == source)
    labelled = (np.asarray(now["labels"]["rows"], np.int64), np.asarray(now["labels"]["same"], bool))
    m = flag_masks(score, now["calibration"]["cutoff"], correct, labelled, np.asarray(p["score2"], np.float64),
                   correct2)
    ps = SimpleNamespace(planted=planted, transform=np.asarray(truth_["transform"]))
    recorded_above = entry.get("hard_negatives_above_cutoff", entry["hard_negatives_flagged"])
    by_score = detection_metrics(ps, m["above"], correct)
    if (now["hard_negatives_above_cutoff"] != recorded_above
            or any(not _same_figure(by_score[k], (entry.get("above_cutoff") or entry["metrics"]).get(k))
                   for k in ("recall", "precision", "flagged"))):
        return "figures by score alone differ from the run's"
    entry["hard_negatives_flagged"] = now["hard_negatives_flagged"]
    entry["featureless_flagged"] = now["featureless_flagged"]
    entry["hard_negatives_above_cutoff"] = now["hard_negatives_above_cutoff"]
    entry["featureless_above_cutoff"] = now["featureless_above_cutoff"]
    entry["above_cutoff"] = {k: now[k + "_above_cutoff"] for k in ("recall", "precision", "flagged")}
    after = detection_metrics(ps, m["flagged"], correct, hit=m["hit"])
    entry["metrics"].update({k: after[k] for k in AT_CUTOFF})
    for t, v in per_transform(ps, m["flagged"], correct, score, hit=m["hit"]).items():
        entry["per_transform"][t].update(recall=v["recall"], precision_at_1pct=v["precision_at_1pct"])
    return None


def _same_figure(a, b) -> bool:
    """Two recorded figures agree (None and NaN are the same missing figure; floats to 1e-9)."""
    missing = lambda v: v is None or (isinstance(v, float) and not np.isfinite(v))  # noqa: E731
    if missing(a) or missing(b):
        return missing(a) and missing(b)
    return abs(float(a) - float(b)) <= 1e-9


def add_next_pairs(pairs_path: Path, rerun_path: Path) -> int:
    """Add each item's next pair (``score2``, ``nb2``) to a side file written before runs saved them, from
    a re-run of the same command (``--name`` another stem) whose scores are the same: every set's truth
    and every method's ``score``, ``nb`` and ``random_scores`` must be equal, or nothing is written.
    The side file is otherwise kept as it was, with ``next_pairs`` naming the re-run.  Returns the
    methods extended."""
    side, rerun = read_results(Path(pairs_path)), read_results(Path(rerun_path))
    sides, reruns = _runs(Path(pairs_path), side), _runs(Path(rerun_path), rerun)
    missing = [k for k in sides if k not in reruns]
    if missing:
        raise SystemExit(f"{rerun_path}: no run {', '.join(missing)}; nothing written")
    n = 0
    for key, run in sides.items():
        again = reruns[key]
        for set_name, s in run["sets"].items():
            t = again["sets"][set_name]
            if any(s[k] != t[k] for k in ("source", "hard", "featureless", "test_ids")):
                raise SystemExit(f"{rerun_path}: set {set_name} is not the same planted set; nothing written")
            for method, p in s["methods"].items():
                q = t["methods"].get(method)
                if q is None or any(p[k] != q[k] for k in ("score", "nb", "random_scores")):
                    raise SystemExit(f"{rerun_path}: {set_name} {method} scored differently; nothing written")
                p["score2"], p["nb2"] = q["score2"], q["nb2"]
                n += 1
        run["next_pairs"] = {"from": Path(rerun_path).name, "created": again.get("created", rerun.get("created")),
                             "note": "score2/nb2 (each item's best other candidate) from a re-run whose scores, "
                                     "nearest pairs and random scores equal this file's in every method"}
    write_compact(Path(pairs_path), side)  # the one serialiser, as write_results
    return n


def recalibrate_file(pairs_path: Path, name: Optional[str], n_labels: int, write: bool = False) -> Dict[str, dict]:
    """``--calibration-only``: :func:`calibration_only` on every run of the side file, each with its own seed
    and label count, a table, and ``NAME_recalibrated.json`` (or ``name``; a run per key) in the results
    folder; ``write``: also :func:`write_back`.  Returns the results by key."""
    pairs_path = Path(pairs_path)
    side = read_results(pairs_path)
    recorded_path = _recorded_path(pairs_path)
    recorded = read_results(recorded_path) if recorded_path.exists() else None
    runs = _paired_runs(pairs_path, side, recorded)
    outs = {k: calibration_only(pairs_path, n_labels, int(s.get("seed", 0)), key=k, side=s, recorded=r)
            for k, s, r in runs}
    rows = []
    for key, out in outs.items():
        for set_name, methods in out["sets"].items():
            for method, r in methods.items():
                b, n = r["before"] or {}, r["now"]
                rows.append({"run": key, "set": set_name, "method": method, "cutoff before": b.get("cutoff", ""),
                             "cutoff now": n["calibration"]["cutoff"],
                             "hard before": b.get("hard_negatives_flagged", ""),
                             "hard above cutoff": n["hard_negatives_above_cutoff"],
                             "hard flagged": n["hard_negatives_flagged"],
                             "recall before": b.get("recall", ""), "recall now": n["recall"],
                             "next pair": n["next_pair"], "status": n["calibration"]["status"]})
    print_table(rows)
    name = name or pairs_path.name[: -len(PAIRS_SUFFIX)] + "_recalibrated"
    for key, out in outs.items():
        path = write_run(name, key, finite(out))
    drawn = sorted({f"{o['n_labels']}, from {o['n_labels_from']}" for o in outs.values()})
    print(f"\nwrote {path} (labels drawn: {'; '.join(drawn)})")
    if write:
        done = write_back(pairs_path, outs, side=side, rec=recorded)
        print(f"rewrote {recorded_path.name}: {len(done)} methods (without a cutoff: not assessed; "
              "with one: the figures at it after the labels)" + "".join(f"\n  {m}" for m in done))
    return outs

"""The contamination audit: examples against corpora (n-gram overlap with provenance, per-source
control thresholds), a model's log-probs (Min-K%, Min-K%++, perplexity) and its continuations
(guided prompting), combined into one verdict per example.

Each method runs only when its input is given; the result holds what ran and nothing else.
"""
from __future__ import annotations

import logging
import tempfile
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional, Union

import numpy as np

from ..errors import SibscanError
from .combine import COMBINED, OperatingPoint, auc, combine_z, weight_by_auc
from .config import ContaminationConfig
from .controls import ControlThreshold, calibrate_source
from .corpus import CorpusReader
from .examples import Examples, as_examples
from .index import NgramIndex, build_index
from .labels import load_labels
from .overlap import ExampleOverlap, overlap_with_sources
from .probes import score_guided, score_logprobs
from .result import ContaminationResult
from .resultcache import ResultCache
from .endpoint import CompletionsEndpoint
from .lm import load_causal_lm

__all__ = ["audit", "UNNAMED"]

log = logging.getLogger("sibscan.contamination")

UNNAMED = "corpus"  # the source name of a corpus given without provenance


def _as_index(name: str, corpus, work: Path, config: ContaminationConfig, text_field: str,
              progress: bool) -> NgramIndex:
    if isinstance(corpus, NgramIndex):
        if corpus.n != config.n:
            raise SibscanError(f"source {name!r}: its index has n={corpus.n}, the audit asks n={config.n}")
        return corpus
    if isinstance(corpus, (str, Path)) and (Path(corpus) / "manifest.json").is_file():
        return _as_index(name, NgramIndex(corpus), work, config, text_field, progress)
    # one folder per source and n: another --n builds its own index beside (both are reused), where one
    # folder per source refused the other n with advice about an option this command does not have
    return build_index(corpus, work / "index" / f"{name}.n{config.n}", n=config.n, shard_size=config.shard_size,
                       text_field=text_field, engine=config.engine, progress=progress)


def _controls(texts) -> List[str]:
    if isinstance(texts, (str, Path)):
        return list(CorpusReader(texts))
    return [str(t) for t in texts]


def _resolve_probe(probe, device: str):
    """A model name/path -> CausalLM; an http(s) URL -> endpoint; an object is used as it is."""
    if not isinstance(probe, str):
        return probe
    if probe.startswith(("http://", "https://")):
        return CompletionsEndpoint(probe)

    return load_causal_lm(probe, device=device)


def audit(
    examples,
    *,
    corpus=None,
    sources: Optional[Mapping[str, object]] = None,
    controls: Optional[Mapping[str, Union[str, Path, Iterable[str]]]] = None,
    model=None,
    complete=None,
    labels=None,
    config: Optional[ContaminationConfig] = None,
    work_dir: Optional[Union[str, Path]] = None,
    text_field: str = "text",
    device: str = "auto",
    progress: bool = True,
) -> ContaminationResult:
    """Audit benchmark examples for contamination.

    Parameters
    ----------
    examples : Examples, path, mapping id -> text, or list of {"id", "text"} dicts
    corpus : path, iterable of str, or NgramIndex, optional
        One corpus without provenance (``best_source`` stays None).
    sources : mapping name -> path / iterable / NgramIndex, optional
        Named corpora: each example is scored against each, with provenance.
    controls : mapping source name -> path or iterable of str, optional
        Texts known to lie outside that source; its overlap threshold is their percentile.
    model : CausalLM, CompletionsEndpoint, model name/path or endpoint URL, optional
        Adds Min-K%, Min-K%++ and perplexity.
    complete : CausalLM, CompletionsEndpoint, callable ``(prefix, max_new_tokens) -> str``,
        model name/path or URL, optional
        Adds guided prompting.
    labels : path or mapping example id -> bool, optional
        Known contaminated (True) / clean (False) examples: AUC per method, weights, recall/FPR.
    config : ContaminationConfig, optional
    work_dir : path, optional
        Where indexes and the resumable model results live (default: a temporary folder, so
        nothing is reused or resumable).
    text_field : str
        Text field of JSONL / Parquet corpora.
    device : {"auto", "cpu", "cuda"}
    progress : bool

    Returns
    -------
    ContaminationResult
    """
    config = (config or ContaminationConfig()).check()
    ex: Examples = as_examples(examples)
    if corpus is not None and sources and UNNAMED in sources:
        raise SibscanError(f"a source is named {UNNAMED!r}, the name of the unnamed corpus; rename it")
    named = dict(sources or {})
    all_sources = dict(named)
    if corpus is not None:
        all_sources[UNNAMED] = corpus
    unknown = set(controls or {}) - set(all_sources)
    if unknown:
        raise SibscanError(f"controls for unknown source(s) {sorted(unknown)}; sources: "
                           f"{', '.join(all_sources) or 'none'}")
    label_map = load_labels(labels, ex) if labels is not None else None
    if model is None and complete is None and not all_sources:
        raise SibscanError("nothing to audit with: give a corpus or sources, a model, or a completer")

    tmp = None
    if work_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="sibscan-contamination-")
        work = Path(tmp.name)
    else:
        work = Path(work_dir)
    try:
        indexes = {name: _as_index(name, c, work, config, text_field, progress) for name, c in all_sources.items()}
        thresholds: Dict[str, ControlThreshold] = {
            s: calibrate_source(s, indexes[s], _controls(texts), config.control_percentile)
            for s, texts in (controls or {}).items()
        }
        overlaps: Optional[List[ExampleOverlap]] = (overlap_with_sources(ex.texts, indexes) if indexes else None)
        logprob = guided = None
        probe_ids: Dict[str, str] = {}
        if model is not None:
            scorer = _resolve_probe(model, device)
            cache = ResultCache(work / "results.jsonl", f"logprobs:{scorer.identity}:k={config.k}")
            logprob = score_logprobs(ex.ids, ex.texts, scorer, cache, k=config.k, progress=progress)
            probe_ids["model"] = scorer.identity
        if complete is not None:
            completer = _resolve_probe(complete, device)
            name = getattr(completer, "identity", None) or getattr(completer, "__name__", type(completer).__name__)
            cache = ResultCache(work / "results.jsonl" if getattr(completer, "identity", None) else None,
                                f"guided:{name}:prefix={config.prefix_fraction}")
            guided = score_guided(ex.ids, ex.texts, completer, cache, config.prefix_fraction, progress=progress)
            probe_ids["complete"] = name
        return _assemble(ex, config, indexes, named, thresholds, overlaps, logprob, guided, label_map, probe_ids)
    finally:
        if tmp is not None:
            tmp.cleanup()


def _method_scores(ex: Examples, overlaps, logprob, guided) -> Dict[str, np.ndarray]:
    scores: Dict[str, np.ndarray] = {}
    if overlaps is not None:
        best = [o.best for o in overlaps]
        scores["overlap_fraction"] = np.array([np.nan if b is None else b.overlap_fraction for b in best])
        scores["longest_match_tokens"] = np.array([np.nan if b is None else b.longest_match_tokens for b in best])
    if logprob is not None:
        for key in ("min_k", "min_k_pp", "perplexity"):
            scores[key] = np.array([np.nan if logprob[i][key] is None else logprob[i][key] for i in ex.ids])
    if guided is not None:
        scores["guided_f1"] = np.array([np.nan if guided[i]["guided_f1"] is None else guided[i]["guided_f1"]
                                        for i in ex.ids])
    return scores


def _assemble(ex, config, indexes, named, thresholds, overlaps, logprob, guided, label_map, probe_ids):
    scores = _method_scores(ex, overlaps, logprob, guided)
    aucs = weights = None
    lab_idx = lab_y = None
    if label_map is not None:
        lab_idx = np.array([i for i, e in enumerate(ex.ids) if e in label_map], np.int64)
        lab_y = np.array([label_map[ex.ids[i]] for i in lab_idx], bool)
        directions = {m: (1 if m != "perplexity" else -1) for m in scores}
        aucs = {m: auc(directions[m] * v[lab_idx], lab_y) for m, v in scores.items()}
        if config.weight_by_auc:
            weights = weight_by_auc({m: aucs[m] for m in COMBINED if m in aucs})
    z = combine_z(scores, weights) if scores else {"combined": np.full(len(ex), np.nan)}
    # per source: (overlap floor, run floor, from controls?) — a calibrated floor is exceeded strictly
    floors = {s: ((thresholds[s].threshold, thresholds[s].run_threshold, True) if s in thresholds
                  else (config.overlap_floor, config.run_floor, False)) for s in indexes}
    flagged: List[Optional[bool]] = []
    reasons: List[List[str]] = []
    for i in range(len(ex)):
        why: List[str] = []
        scored = False
        if overlaps is not None and overlaps[i].scorable:
            scored = True
            for s, match in overlaps[i].per_source.items():
                floor, run_floor, calibrated = floors[s]
                tag = "" if s not in named else f":{s}"
                over, run = match.overlap_fraction, match.longest_match_tokens
                if (over > floor) if calibrated else (over >= floor):
                    why.append(f"overlap{tag}")
                if (run > run_floor) if calibrated else (run >= run_floor):
                    why.append(f"run{tag}")
        zi = z["combined"][i]
        if np.isfinite(zi):
            scored = True
            if zi >= config.z_threshold:
                why.append("z")
        if any(np.isfinite(v[i]) for k, v in scores.items() if k not in ("overlap_fraction", "longest_match_tokens")):
            scored = True
        flagged.append(bool(why) if scored else None)
        reasons.append(why)
    evaluation = None
    if label_map is not None:
        known = np.array([flagged[i] is not None for i in lab_idx], bool)
        op = OperatingPoint.measure(np.array([bool(flagged[i]) for i in lab_idx])[known], lab_y[known])
        # the flags' recall/FPR are over the labelled examples with a verdict (a shorter-than-n one has
        # none): how many were left out is part of the record, and said wherever the rates are shown
        evaluation = {"n_labelled": int(len(lab_idx)), "n_contaminated": int(lab_y.sum()),
                      "n_without_verdict": int((~known).sum()), "auc": aucs,
                      "weights": weights if weights is not None else {m: 1.0 for m in COMBINED if m in scores},
                      "weighted_by_auc": bool(config.weight_by_auc), "operating_point": op}
    return ContaminationResult(examples=ex, config=config, indexes=indexes, named=list(named), thresholds=thresholds,
                               overlaps=overlaps, logprob=logprob, guided=guided, z=z, flagged=flagged,
                               reasons=reasons, evaluation=evaluation, probes=probe_ids)

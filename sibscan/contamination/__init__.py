"""Benchmark contamination in language-model corpora.

Three kinds of evidence, picked by what you can see:

* the corpus (or a sample): n-gram overlap with provenance per source, thresholds from control
  texts (:func:`build_index`, :class:`NgramIndex`);
* the model's token log-probs: Min-K%, Min-K%++, perplexity (:class:`CausalLM`,
  :class:`CompletionsEndpoint`);
* the model's generations only: guided prompting, LCS precision/recall/F1;

combined by :func:`audit` into one record per example (:class:`ContaminationResult`).
"""
from __future__ import annotations

import importlib

_API = {
    "CausalLM": ".lm",
    "CompletionsEndpoint": ".endpoint",
    "ContaminationConfig": ".config",
    "ContaminationResult": ".result",
    "Examples": ".examples",
    "NgramIndex": ".index",
    "OperatingPoint": ".combine",
    "audit": ".audit",
    "build_index": ".index",
    "calibrate_source": ".controls",
    "controls_needed": ".controls",
    "lcs_prf": ".guided",
    "load_causal_lm": ".lm",
    "load_examples": ".examples",
    "min_k_scores": ".minkprob",
    "write_html": ".html",
}

__all__ = sorted(_API)


def __getattr__(name: str):
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'sibscan.contamination' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return __all__

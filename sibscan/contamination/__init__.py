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

# Imported at the top, not lazily: once any entry point is imported (audit, config, index) the rest
# of the package costs 8-32 ms (``python -X importtime``, issue 33); language models and Ray are
# imported only when used.
from .audit import audit
from .combine import OperatingPoint
from .config import ContaminationConfig
from .controls import calibrate_source, controls_needed
from .endpoint import CompletionsEndpoint
from .examples import Examples, load_examples
from .guided import lcs_prf
from .html import write_html
from .index import NgramIndex, build_index
from .lm import CausalLM, load_causal_lm
from .minkprob import min_k_scores
from .result import ContaminationResult

__all__ = ["CausalLM", "CompletionsEndpoint", "ContaminationConfig", "ContaminationResult", "Examples", "NgramIndex",
           "OperatingPoint", "audit", "build_index", "calibrate_source", "controls_needed", "lcs_prf", "load_causal_lm",
           "load_examples", "min_k_scores", "write_html"]

"""Guided prompting: does the model continue an example's beginning with its true ending?

Each example is cut at a word boundary (half its words by default); the model continues the
prefix (any ``complete(prefix, max_new_tokens) -> text``: a local model's greedy ``generate`` or an
endpoint); the continuation is compared with the true suffix by the longest common subsequence of
words (:func:`sibscan.kernels.textalign.lcs_length`, the textalign tokenisation):

* precision = LCS / words generated, recall = LCS / words of the true suffix, F1 their harmonic
  mean.  The score is F1: a verbose continuation that happens to contain the suffix's words in
  order keeps recall 1.0 but its F1 falls with every extra word (tested: below 0.1).

Direction: higher F1 means more memorised.
"""
from __future__ import annotations

import math
import re
import unicodedata
from typing import Callable, Dict, Tuple

from ..kernels.textalign import lcs_length, tokenize

__all__ = ["DEFAULT_PREFIX_FRACTION", "lcs_prf", "split_prefix", "guided_score"]

DEFAULT_PREFIX_FRACTION = 0.5
_WORD = re.compile(r"\w+")


def lcs_prf(generated: str, reference: str) -> Tuple[float, float, float]:
    """Word-LCS precision, recall and F1 of ``generated`` against ``reference``.

    Returns
    -------
    (precision, recall, f1)
        Zero where a side has no words.
    """
    g, r = tokenize(generated), tokenize(reference)
    if not g or not r:
        return 0.0, 0.0, 0.0
    lcs = lcs_length(g, r)
    p, rc = lcs / len(g), lcs / len(r)
    return p, rc, (0.0 if lcs == 0 else 2 * p * rc / (p + rc))


def split_prefix(text: str, fraction: float = DEFAULT_PREFIX_FRACTION) -> Tuple[str, str]:
    """Cut ``text`` before word ``ceil(fraction * n_words)`` (at least one word on each side).

    Returns
    -------
    (prefix, suffix)
        ``prefix`` without trailing spaces; ``("", "")`` for a text of fewer than two words.
    """
    text = unicodedata.normalize("NFKC", text)
    starts = [m.start() for m in _WORD.finditer(text)]
    if len(starts) < 2:
        return "", ""
    cut = min(max(1, math.ceil(fraction * len(starts))), len(starts) - 1)
    return text[: starts[cut]].rstrip(), text[starts[cut]:]


def guided_score(text: str, complete: Callable[[str, int], str],
                 prefix_fraction: float = DEFAULT_PREFIX_FRACTION) -> Dict[str, object]:
    """Continue the example's prefix and score the continuation against its suffix.

    ``max_new_tokens`` is twice the suffix's words (tokens per word are about 1.3 in English), at
    least 16, at most 256.

    Returns
    -------
    dict with ``guided_f1``, ``guided_precision``, ``guided_recall`` (None for a text of fewer than
        two words) and ``continuation``.
    """
    prefix, suffix = split_prefix(text, prefix_fraction)
    if not prefix:
        return {"guided_f1": None, "guided_precision": None, "guided_recall": None, "continuation": None}
    budget = min(256, max(16, 2 * len(tokenize(suffix))))
    gen = complete(prefix, budget)
    p, r, f1 = lcs_prf(gen, suffix)
    return {"guided_f1": f1, "guided_precision": p, "guided_recall": r, "continuation": gen}

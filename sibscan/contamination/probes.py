"""Run the model-based methods over the examples, resumably.

A *log-prob scorer* is anything with ``identity`` and either ``token_stats(texts) -> list of
(logp, mu, sigma)`` (a :class:`~.lm.CausalLM`, batched) or ``token_stats(text)`` (an endpoint, one
request per text).  A *completer* is anything with ``complete(prefix, max_new_tokens) -> str``, or a
bare callable.  Results go to a :class:`~.resultcache.ResultCache` as each example finishes; an
error (an endpoint that times out) is re-raised with how many examples are kept for the re-run.
"""
from __future__ import annotations

from typing import Callable, Dict, Sequence

from ..errors import SibscanError
from ..progress import bar as progress_bar
from .guided import DEFAULT_PREFIX_FRACTION, guided_score
from .minkprob import DEFAULT_K, min_k_scores
from .resultcache import ResultCache

__all__ = ["score_logprobs", "score_guided"]


def _interrupted(exc: SibscanError, done: int, total: int, cache: ResultCache) -> SibscanError:
    if cache.path is None:
        kept = "kept in memory only (give a cache file to resume)"
    else:
        kept = f"kept in {cache.path}; re-run the same command to resume"
    return SibscanError(f"{exc}; {done} of {total} examples were scored before, {kept}")


def score_logprobs(ids: Sequence[str], texts: Sequence[str], scorer, cache: ResultCache, k: float = DEFAULT_K,
                   progress: bool = True, chunk: int = 32) -> Dict[str, dict]:
    """Min-K%, Min-K%++ and perplexity of every example.

    Returns
    -------
    dict example_id -> {"min_k", "min_k_pp", "perplexity", "n_tokens", "min_k_pp_support"}
    """
    support = "full" if not hasattr(scorer, "top_logprobs") else f"top-{scorer.top_logprobs}"
    todo = [i for i in range(len(ids)) if cache.get(ids[i], texts[i]) is None]
    batched = not hasattr(scorer, "url")  # a local model takes a list of texts
    done = len(ids) - len(todo)
    with progress_bar(len(ids), "min-k%++: examples scored", "examples", enabled=progress) as bar:
        bar.update(done)
        try:
            step = chunk if batched else 1
            for a in range(0, len(todo), step):
                part = todo[a:a + step]
                stats = (scorer.token_stats([texts[i] for i in part]) if batched
                         else [scorer.token_stats(texts[part[0]])])
                for i, (lp, mu, sd) in zip(part, stats):
                    res = min_k_scores(lp, mu, sd, k=k)
                    res["min_k_pp_support"] = support
                    cache.put(ids[i], texts[i], res)
                    done += 1
                bar.update(len(part))
        except SibscanError as exc:
            raise _interrupted(exc, done, len(ids), cache) from None
    return {ids[i]: cache.get(ids[i], texts[i]) for i in range(len(ids))}


def score_guided(ids: Sequence[str], texts: Sequence[str], completer, cache: ResultCache,
                 prefix_fraction: float = DEFAULT_PREFIX_FRACTION, progress: bool = True) -> Dict[str, dict]:
    """Guided-prompting LCS precision/recall/F1 of every example.

    Returns
    -------
    dict example_id -> {"guided_f1", "guided_precision", "guided_recall", "continuation"}
    """
    complete: Callable[[str, int], str] = getattr(completer, "complete", completer)
    done = 0
    with progress_bar(len(ids), "guided: examples continued", "examples", enabled=progress) as bar:
        try:
            for i in range(len(ids)):
                if cache.get(ids[i], texts[i]) is None:
                    cache.put(ids[i], texts[i], guided_score(texts[i], complete, prefix_fraction))
                done += 1
                bar.update()
        except SibscanError as exc:
            raise _interrupted(exc, done, len(ids), cache) from None
    return {ids[i]: cache.get(ids[i], texts[i]) for i in range(len(ids))}

"""An OpenAI-compatible ``/v1/completions`` endpoint as a contamination probe.

* Log-probs: the text is sent with ``echo=true, max_tokens=0, logprobs=K``; the reply's
  ``token_logprobs`` give Min-K% and perplexity exactly.  An endpoint returns only the top ``K``
  alternatives per token, so Min-K%++'s ``mu`` and ``sigma`` are computed over those ``K`` log-probs
  renormalised (plus the actual token when it is not among them): an approximation, marked
  ``min_k_pp_support = "top-K"`` in the results (a local model gives ``"full"``).
* Completion: ``prompt=prefix, temperature=0``; the reply's text is the continuation.

A time-out, a refused connection, an error status or a reply without log-probs raises a
:class:`SibscanError` naming the endpoint; results already obtained stay in the result cache and a
re-run resumes from them.  The key, if any, is read from ``api_key`` or the environment variable
named by ``api_key_env`` (``OPENAI_API_KEY``) and sent as a bearer token; it is never printed.
"""
from __future__ import annotations

import json
import os
import socket
import urllib.error
import urllib.request
from typing import List, Optional, Tuple

import numpy as np

from ..errors import SibscanError

__all__ = ["CompletionsEndpoint"]


class CompletionsEndpoint:
    """Client of one OpenAI-compatible completions endpoint.

    Parameters
    ----------
    url : str
        Base URL (``http://host:8000`` or ``http://host:8000/v1``); ``/v1/completions`` is appended
        unless the URL already ends with ``/completions``.
    model : str, optional
        The ``model`` field of each request.
    timeout : float
        Seconds per request.
    top_logprobs : int
        Alternatives per token asked for (Min-K%++ support).
    api_key : str, optional
    api_key_env : str
    """

    def __init__(self, url: str, model: Optional[str] = None, timeout: float = 60.0, top_logprobs: int = 20,
                 api_key: Optional[str] = None, api_key_env: str = "OPENAI_API_KEY"):
        base = url.rstrip("/")
        if not base.startswith(("http://", "https://")):
            raise SibscanError(f"endpoint {url!r} is not an http(s) URL")
        if not base.endswith("/completions"):
            base = base + ("/completions" if base.endswith("/v1") else "/v1/completions")
        self.url = base
        self.model = model
        self.timeout = float(timeout)
        self.top_logprobs = int(top_logprobs)
        self._key = api_key if api_key is not None else os.environ.get(api_key_env)

    @property
    def identity(self) -> str:
        return f"completions-endpoint({self.url},model={self.model},top={self.top_logprobs})"

    def _post(self, body: dict) -> dict:
        if self.model is not None:
            body = {"model": self.model, **body}
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        req = urllib.request.Request(self.url, data=json.dumps(body).encode(), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                payload = resp.read()
        except (socket.timeout, TimeoutError):
            raise SibscanError(f"endpoint {self.url} timed out after {self.timeout:g} s") from None
        except urllib.error.HTTPError as exc:
            raise SibscanError(f"endpoint {self.url} answered HTTP {exc.code} ({exc.reason})") from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, (socket.timeout, TimeoutError)):
                raise SibscanError(f"endpoint {self.url} timed out after {self.timeout:g} s") from None
            raise SibscanError(f"endpoint {self.url} unreachable ({reason})") from None
        try:
            return json.loads(payload)
        except json.JSONDecodeError:
            raise SibscanError(f"endpoint {self.url} returned something that is not JSON") from None

    def token_stats(self, text: str) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per scored token (all but the first): the endpoint's ``log p`` (exact), and ``mu``/``sigma``
        of log p under the renormalised top-K (the target added when missing).  Renormalising
        shifts every log p by one constant, which cancels in ``(log p - mu) / sigma``.

        Returns
        -------
        logp, mu, sigma : ndarray of shape (t,), float64
        """
        reply = self._post({"prompt": text, "max_tokens": 0, "echo": True, "logprobs": self.top_logprobs,
                            "temperature": 0})
        try:
            lp = reply["choices"][0]["logprobs"]
            token_lp: List[Optional[float]] = lp["token_logprobs"]
            tops = lp.get("top_logprobs") or [None] * len(token_lp)
            if not token_lp:
                raise KeyError
        except (KeyError, IndexError, TypeError):
            raise SibscanError(f"endpoint {self.url} returned no log-probs (it must support echo=true with "
                               "logprobs, as vLLM and llama.cpp's server do)") from None
        logp, mu, sigma = [], [], []
        for v, top in zip(token_lp, tops):
            if v is None:  # the first token has no context
                continue
            vals = [float(x) for x in top.values()] if isinstance(top, dict) else []
            if not any(abs(x - v) < 1e-9 for x in vals):
                vals.append(float(v))
            a = np.asarray(vals, np.float64)
            p = np.exp(a - a.max())
            p /= p.sum()
            m = float((p * a).sum())
            logp.append(float(v))
            mu.append(m)
            sigma.append(float(np.sqrt(max((p * (a - m) ** 2).sum(), 0.0))))
        return np.asarray(logp), np.asarray(mu), np.asarray(sigma)

    def complete(self, prefix: str, max_new_tokens: int = 64) -> str:
        """Greedy continuation of ``prefix``."""
        reply = self._post({"prompt": prefix, "max_tokens": int(max_new_tokens), "temperature": 0})
        try:
            return str(reply["choices"][0]["text"])
        except (KeyError, IndexError, TypeError):
            raise SibscanError(f"endpoint {self.url} returned no completion text") from None

"""Append-only, resumable per-example results of the slow methods (a model, an endpoint).

One JSON line per finished example: the method's identity, the example id, a hash of its text and
the result.  A re-run with the same identity skips the examples already there, so an endpoint
that times out half-way loses nothing.  Lines of other identities (another model, another k) are
kept but ignored.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Dict, Optional, Tuple

from ..atomic import append_jsonl

__all__ = ["ResultCache"]


def _text_key(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


class ResultCache:
    """Results of one method keyed by (example id, text).

    Parameters
    ----------
    path : str or Path, optional
        The JSONL file; None keeps results in memory only.
    identity : str
        The method and its parameters.
    """

    def __init__(self, path, identity: str):
        self.path = None if path is None else Path(path)
        self.identity = identity
        self._done: Dict[Tuple[str, str], dict] = {}
        if self.path is not None and self.path.is_file():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by a crash: that example is recomputed
                if isinstance(rec, dict) and rec.get("identity") == identity:
                    self._done[(rec["example_id"], rec["text"])] = rec["result"]

    def __len__(self) -> int:
        return len(self._done)

    def get(self, example_id: str, text: str) -> Optional[dict]:
        return self._done.get((example_id, _text_key(text)))

    def put(self, example_id: str, text: str, result: dict) -> None:
        key = (example_id, _text_key(text))
        self._done[key] = result
        if self.path is not None:
            append_jsonl(self.path, {"identity": self.identity, "example_id": example_id, "text": key[1],
                                     "result": result})

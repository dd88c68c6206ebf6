"""Shared torch machinery of the neural encoders (``clip``, ``clip-text``, ``minilm``, ``effnet``).

* one device policy (:func:`sibscan.device.resolve_device`), bf16 autocast on CUDA;
* image files decoded by :func:`sibscan.imageio.open_image` in a thread pool, a batch ahead of the
  model, into reused uint8 buffers at the encoder's ``input_size``
  (:mod:`sibscan.encoders.imagebatch`); on CUDA, JPEGs are decoded and resized on the GPU
  (:mod:`sibscan.encoders.gpubatch`);
* on the CPU the image model runs under ONNX Runtime when it is installed
  (:mod:`sibscan.encoders.onnxrt`, ``runtime="auto"``), else in PyTorch;
* batched inference under ``torch.inference_mode``; the output is always float32, L2-normalised
  numpy.

torch is imported lazily: importing this module costs nothing.
"""
from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from pathlib import Path
from typing import Any, Callable, ClassVar, Dict, Optional, Sequence, Tuple

import numpy as np

from ..device import resolve_device
from ..errors import SibscanError, require
from .base import Encoder

__all__ = ["TorchEncoder", "TextTorchEncoder", "file_sha256", "short_hash"]

log = logging.getLogger("sibscan.encoders")

_SHA_CACHE: Dict[Tuple[str, int, int], str] = {}


def file_sha256(path: str | os.PathLike) -> str:
    """Hex sha256 of a file, remembered per (path, size, mtime) for the life of the process."""
    path = Path(path)
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns)
    if key not in _SHA_CACHE:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        _SHA_CACHE[key] = h.hexdigest()
    return _SHA_CACHE[key]


def short_hash(text: str, n: int = 12) -> str:
    """First ``n`` hex digits of the sha256 of ``text`` (identities of preprocessing pipelines)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:n]


def torch_available(extra: str, *modules: str) -> Tuple[bool, str]:
    """``(True, "")`` when torch and ``modules`` import, else ``(False, "pip install 'sibscan[extra]'")``."""
    import importlib.util

    for m in ("torch", *modules):
        if importlib.util.find_spec(m) is None:
            return False, f"{m} is not installed; install it with: pip install 'sibscan[{extra}]'"
    return True, ""


class TorchEncoder(Encoder):
    """Base of the neural encoders: device, batching, autocast and normalisation.

    Parameters
    ----------
    device : {"auto", "cpu", "cuda", "cuda:N"}
        Resolved once; ``"cuda"`` where there is none raises :class:`SibscanError`.
    batch_size : int, optional
        Items per forward pass (default: 256 on CUDA, 32 on CPU).
    num_workers : int, optional
        Image-decoding threads (default: the cores this process may use).
    autocast : bool
        bf16 autocast on CUDA (ignored on CPU, which always runs float32).
    """

    weight_free: ClassVar[bool] = False
    #: :func:`sibscan.store.cache.embed` hands whole blocks to ``encode`` and lets it batch internally
    batches_internally: ClassVar[bool] = True
    #: extra needed for ``available()``: (extra name, modules to find)
    requires: ClassVar[Tuple[str, Tuple[str, ...]]] = ("torch", ())

    def __init__(
        self,
        *,
        device: str = "auto",
        batch_size: Optional[int] = None,
        num_workers: Optional[int] = None,
        autocast: bool = True,
    ) -> None:
        require("torch", self.requires[0], f"the {self.name} encoder")
        self.device = resolve_device(device)
        self.on_cuda = self.device.startswith("cuda")
        if batch_size is not None and int(batch_size) < 1:
            raise SibscanError(f"batch size must be at least 1, got {batch_size}")
        self.batch_size = int(batch_size) if batch_size else (256 if self.on_cuda else 32)
        if num_workers is not None and int(num_workers) < 0:
            raise SibscanError(f"num_workers must be 0 or more, got {num_workers}")
        self.num_workers = int(num_workers or 0)  # 0: the default (imagebatch.default_threads)
        self.use_autocast = bool(autocast)
        if self.on_cuda:
            import torch

            torch.backends.cudnn.benchmark = True  # fixed input sizes: let cuDNN pick the fastest kernels

    @classmethod
    def available(cls) -> Tuple[bool, str]:
        extra, modules = cls.requires
        return torch_available(extra, *modules)

    # --- machinery ---------------------------------------------------------------------------
    def autocast(self):
        """bf16 autocast on CUDA; a no-op context on CPU."""
        import torch

        if self.on_cuda and self.use_autocast:
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def _finish(self, parts: list, n: int) -> np.ndarray:
        """Concatenate per-batch outputs (on the device) into float32 unit rows on the host."""
        import torch

        if not parts:
            return np.zeros((n, self.dim), dtype=np.float32)
        out = torch.cat(parts).float()
        out = torch.nn.functional.normalize(out, dim=1).cpu().numpy()
        if out.shape != (n, self.dim):
            raise SibscanError(
                f"encoder {self.name!r} produced an array of shape {out.shape}, expected {(n, self.dim)}"
            )
        return np.ascontiguousarray(out, dtype=np.float32)

    def _forward(self, x):  # pragma: no cover - interface
        """Model forward on a device batch; returns ``Tensor`` of shape (batch, dim)."""
        raise NotImplementedError


class TextTorchEncoder(TorchEncoder):
    """A text encoder: ``encode(texts)`` in mini-batches of ``batch_size``."""

    modality: ClassVar[str] = "text"

    def encode(self, batch: Sequence[str], *, batch_size: Optional[int] = None,
               on_batch: Optional[Callable[[int], Any]] = None) -> np.ndarray:
        """Embed strings, longest first (less padding), returned in input order; arguments and result as
        :meth:`sibscan.encoders.imagemodel.ImageTorchEncoder.encode`'s."""
        import torch

        texts = [str(t) for t in batch]
        bs = int(batch_size or self.batch_size)
        # mini-batches of similar length pad less: encode longest first, then restore the order
        order = np.argsort([-len(t) for t in texts], kind="stable")
        parts = []
        with torch.inference_mode():
            for start in range(0, len(texts), bs):
                chunk = [texts[i] for i in order[start:start + bs]]
                with self.autocast():
                    parts.append(self._forward(chunk))
                if on_batch is not None:
                    on_batch(len(chunk))
        out = self._finish(parts, len(texts))
        restored = np.empty_like(out)
        restored[order] = out
        return restored


def reject_options(encoder: str, options: Dict[str, Any], accepted: Sequence[str]) -> None:
    """Raise a :class:`SibscanError` for options an encoder does not take (never swallow them)."""
    if options:
        bad = sorted(options)
        raise SibscanError(
            f"encoder {encoder!r} does not take option(s) {', '.join(bad)}; "
            f"its options are: {', '.join(sorted(accepted))}"
        )


@contextlib.contextmanager
def quiet_logger(name: str, startswith: str):
    """Drop log records of logger ``name`` whose message starts with ``startswith``."""

    class _Drop(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            return not str(record.getMessage()).startswith(startswith)

    logger = logging.getLogger(name)
    flt = _Drop()
    logger.addFilter(flt)
    try:
        yield
    finally:
        logger.removeFilter(flt)

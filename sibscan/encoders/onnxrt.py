"""The CPU runtime of the image encoders: the torch model exported once to ONNX, run by ONNX Runtime.

The exported graph takes ``uint8`` pixels of shape ``(batch, 3, H, W)`` and normalises them itself,
so the CPU side only fills byte buffers (:mod:`sibscan.encoders.imagebatch`).  It is written once
per encoder identity (weights, input size, preprocessing), torch version and opset into the user
cache directory (:func:`cache_root`), atomically, and reused by every later process; a directory
that cannot be written is reported and the model is kept in memory instead.

ONNX Runtime runs with ``intra_op_num_threads`` = the cores this process may use, one inter-op
thread, its memory arena on (buffers are reused from batch to batch instead of being returned to
the operating system and faulted in again).  Its embeddings equal PyTorch's within cosine
>= 0.999 per item (``tests/test_encoders_runtime.py``; ``python -m benchmarks.encoders`` reports
the agreement and the speed ratio on the same images).
"""
from __future__ import annotations

import hashlib
import io
import logging
import os
import warnings
from pathlib import Path
from typing import Any, Optional, Tuple

import numpy as np

from ..errors import SibscanError, require
from .imagebatch import default_threads

__all__ = ["OPSET", "OnnxImageModel", "cache_root", "onnx_available"]

log = logging.getLogger("sibscan.encoders")

#: ONNX opset of the exported graphs (part of the cache key)
OPSET = 17
#: bump when the exported graph's contract changes (input dtype, layout, normalisation)
GRAPH_VERSION = "uint8-nchw-1"


def onnx_available() -> bool:
    """Whether ONNX Runtime is installed (``pip install 'sibscan[onnx]'``)."""
    import importlib.util

    return importlib.util.find_spec("onnxruntime") is not None


def cache_root() -> Path:
    """sibscan's user cache: ``$SIBSCAN_CACHE_DIR``, else ``$XDG_CACHE_HOME/sibscan``, else ``~/.cache/sibscan``."""
    if os.environ.get("SIBSCAN_CACHE_DIR"):
        return Path(os.environ["SIBSCAN_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "sibscan"


class _Uint8Graph:
    """Build the module that is exported: uint8 pixels -> normalised float -> the encoder's forward."""

    @staticmethod
    def module(encoder: Any):
        import torch

        class Uint8Input(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.net = encoder.net  # registered, so its weights become the graph's initialisers
                self.register_buffer("mean", torch.tensor(encoder.mean).view(1, 3, 1, 1) * 255.0)
                self.register_buffer("std", torch.tensor(encoder.std).view(1, 3, 1, 1) * 255.0)

            def forward(self, x):
                return encoder._forward((x.float() - self.mean) / self.std)

        return Uint8Input().eval()


class OnnxImageModel:
    """An image encoder's model under ONNX Runtime on the CPU.

    Parameters
    ----------
    encoder : ImageTorchEncoder
        Supplies ``net``, ``_forward``, ``mean``, ``std``, ``input_size``, ``name``, ``identity``.
    threads : int, optional
        ``intra_op_num_threads`` (default: the cores this process may use).
    cache_dir : path, optional
        Where the exported model is kept (default ``cache_root() / "onnx"``).

    Raises
    ------
    SibscanError
        ONNX Runtime is missing, or the export or the session failed (with the first line of why).
    """

    def __init__(self, encoder: Any, *, threads: Optional[int] = None, cache_dir: Optional[os.PathLike] = None):
        ort = require("onnxruntime", "onnx", "the ONNX Runtime image encoder")
        import torch

        self.size: Tuple[int, int] = tuple(encoder.input_size)
        key = "|".join([encoder.identity, torch.__version__.split("+")[0], str(OPSET), GRAPH_VERSION])
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
        folder = Path(cache_dir) if cache_dir is not None else cache_root() / "onnx"
        self.path: Optional[Path] = folder / f"{encoder.name}-{digest}.onnx"
        model = self._load_or_export(encoder, self.path)
        options = ort.SessionOptions()
        self.threads = int(threads or default_threads())
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.enable_cpu_mem_arena = True
        options.log_severity_level = 3
        try:
            self.session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # ORT raises its own exception types
            raise SibscanError(f"ONNX Runtime could not load the exported {encoder.name} model ({_first(exc)}); "
                               f"delete {self.path} or use runtime='torch'") from None
        self.input_name = self.session.get_inputs()[0].name

    def _load_or_export(self, encoder: Any, path: Path):
        """The model file's path (exported now if missing), or its bytes when the cache is not writable."""
        if path.is_file():
            return str(path)
        data = self._export(encoder)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
            log.info("exported %s to %s", encoder.identity, path)
            return str(path)
        except OSError as exc:
            log.warning("cannot keep the exported %s model in %s (%s); set SIBSCAN_CACHE_DIR to a writable "
                        "folder to export it once instead of in every process", encoder.name, path.parent,
                        exc.strerror)
            self.path = None
            return data

    @staticmethod
    def _export(encoder: Any) -> bytes:
        import torch

        module = _Uint8Graph.module(encoder)
        h, w = encoder.input_size
        example = torch.randint(0, 256, (2, 3, h, w), dtype=torch.uint8)
        buf = io.BytesIO()
        fastpath = torch.backends.mha.get_fastpath_enabled()
        try:
            # nn.MultiheadAttention's fused inference kernel has no ONNX form: trace the plain ops
            torch.backends.mha.set_fastpath_enabled(False)
            with warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
                # the TorchScript exporter needs no onnxscript; its deprecation notice is not the user's concern
                warnings.simplefilter("ignore")
                torch.onnx.export(module, (example,), buf, dynamo=False, opset_version=OPSET,
                                  input_names=["pixels"], output_names=["embedding"],
                                  dynamic_axes={"pixels": {0: "batch"}, "embedding": {0: "batch"}})
        except Exception as exc:  # the exporter raises many types
            raise SibscanError(f"could not export {encoder.name} to ONNX ({_first(exc)}); "
                               "use runtime='torch'") from None
        finally:
            torch.backends.mha.set_fastpath_enabled(fastpath)
        return buf.getvalue()

    def __call__(self, pixels: np.ndarray) -> np.ndarray:
        """Embeddings (not yet normalised) of ``pixels``: ndarray (b, 3, H, W) uint8 -> (b, dim) float32."""
        return self.session.run(None, {self.input_name: np.ascontiguousarray(pixels)})[0]


def _first(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__

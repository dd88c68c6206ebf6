"""The base of the neural image encoders (``effnet``, ``clip``): files in, unit vectors out, fast.

``encode(paths)`` runs one pipeline per device:

* CPU — images decoded a batch ahead in a thread pool into two reused uint8 buffers
  (:func:`sibscan.encoders.imagebatch.pixel_batches`), the model under ONNX Runtime
  (:class:`sibscan.encoders.onnxrt.OnnxImageModel`, ``runtime="auto"`` when it is installed, with
  intra-op threads = the cores) or PyTorch (``runtime="torch"``), the embeddings written into one
  preallocated output array;
* CUDA — JPEGs decoded and resized on the GPU, other files on the CPU into pinned buffers, the next
  batch prepared on a side stream while the model runs bf16 autocast on the current one
  (:func:`sibscan.encoders.gpubatch.cuda_pixel_batches`).

Both feed the model ``uint8`` pixels of shape ``(batch, 3, S, S)`` — short side resized to ``S``
(bicubic), centre crop — normalised by the model's mean/std inside the model call.  ``S`` is the
encoder's ``input_size``: the model's native size, or for encoders with ``scales_to_data`` the size
chosen from the data (:mod:`sibscan.encoders.scale`), recorded in the identity.
"""
from __future__ import annotations

import logging
from typing import Any, Callable, ClassVar, Optional, Sequence, Tuple

import numpy as np

from ..errors import InputError, SibscanError
from ._torch import TorchEncoder
from .imagebatch import default_threads, pixel_batches
from .gpubatch import cuda_pixel_batches
from .onnxrt import OnnxImageModel, onnx_available

__all__ = ["ImageTorchEncoder", "RUNTIMES"]

log = logging.getLogger("sibscan.encoders")

#: CPU runtimes of the image encoders; "auto" = onnx when onnxruntime is installed, else torch
RUNTIMES = ("auto", "onnx", "torch")


class ImageTorchEncoder(TorchEncoder):
    """An image encoder: ``encode`` takes files, ``encode_tensors`` decoded pixels.

    Subclasses set ``mean``, ``std``, ``input_size`` and ``dim``, implement ``_forward`` (float
    input on the device -> (batch, dim)), and call :meth:`_set_runtime` in ``__init__``.
    """

    modality: ClassVar[str] = "image"
    #: whether the input size may follow the data (a CNN); a ViT keeps the size its position
    #: embeddings were made for
    scales_to_data: ClassVar[bool] = False

    #: PIL image -> float tensor (3, H, W): the same preprocessing as ``encode``'s, for callers
    #: that decode themselves (``encode_tensors`` with float input)
    transform: Callable
    #: per-channel mean and std of the model's input normalisation (0..1 scale)
    mean: Tuple[float, float, float]
    std: Tuple[float, float, float]
    #: (height, width) fed to the model
    input_size: Tuple[int, int]
    #: the CPU runtime asked for, and the one in use after the first CPU call ("onnxruntime"/"torch")
    runtime: str = "auto"
    runtime_used: Optional[str] = None

    def _set_runtime(self, runtime: Optional[str]) -> None:
        runtime = runtime or "auto"
        if runtime not in RUNTIMES:
            raise SibscanError(f"unknown runtime {runtime!r} for {self.name}; available: {', '.join(RUNTIMES)}")
        if runtime == "onnx" and self.on_cuda:
            raise SibscanError(f"runtime 'onnx' runs {self.name} on the CPU; pass device='cpu' or runtime='auto'")
        self.runtime = runtime
        self._cpu_model: Optional[Callable[[np.ndarray], np.ndarray]] = None

    def _threads(self) -> int:
        return self.num_workers or default_threads()

    # --- the CPU model: ONNX Runtime or PyTorch -------------------------------------------------
    def cpu_model(self) -> Callable[[np.ndarray], np.ndarray]:
        """uint8 pixels (b, 3, H, W) -> raw embeddings (b, dim) float32, on the CPU runtime in use."""
        if self._cpu_model is None:
            if self.runtime == "onnx" or (self.runtime == "auto" and onnx_available()):
                try:
                    self._cpu_model, self.runtime_used = OnnxImageModel(self), "onnxruntime"
                except SibscanError as exc:
                    if self.runtime == "onnx":
                        raise
                    log.warning("%s; %s runs in PyTorch instead", exc, self.name)
            if self._cpu_model is None:
                self._cpu_model, self.runtime_used = self._torch_cpu, "torch"
        return self._cpu_model

    def _torch_cpu(self, pixels: np.ndarray) -> np.ndarray:
        import torch

        with torch.inference_mode():
            return self._forward_device(torch.from_numpy(pixels)).float().numpy()

    # --- encoding ---------------------------------------------------------------------------------
    def encode(self, batch: Sequence[str], *, batch_size: Optional[int] = None,
               on_batch: Optional[Callable[[int], Any]] = None) -> np.ndarray:
        """Embed image files.

        Parameters
        ----------
        batch : sequence of str
            Image paths.
        batch_size : int, optional
            Items per forward pass (default: the encoder's ``batch_size``).
        on_batch : callable, optional
            Called with the number of items after each forward pass (progress bars).

        Returns
        -------
        ndarray of shape (len(batch), dim), float32, rows L2-normalised.

        Raises
        ------
        InputError
            An image that cannot be decoded (one line: the path, the reason, the encoder).
        """
        bs = int(batch_size or self.batch_size)
        size = int(self.input_size[0])
        try:
            if self.on_cuda:
                return self._encode_cuda(batch, size, bs, on_batch)
            model = self.cpu_model()
            out = np.empty((len(batch), self.dim), np.float32)
            for start, pixels in pixel_batches(batch, size, bs, threads=self._threads()):
                out[start:start + len(pixels)] = model(pixels)
                if on_batch is not None:
                    on_batch(len(pixels))
        except InputError as exc:
            raise InputError(f"{exc} (while embedding with {self.name})") from None
        return self._unit_rows(out, len(batch))

    def _encode_cuda(self, batch: Sequence[str], size: int, bs: int, on_batch) -> np.ndarray:
        import torch

        out = torch.empty((len(batch), self.dim), dtype=torch.float32, device=self.device)
        with torch.inference_mode():
            for start, pixels in cuda_pixel_batches(batch, size, bs, device=self.device, threads=self._threads()):
                out[start:start + len(pixels)] = self._forward_device(pixels).float()
                if on_batch is not None:
                    on_batch(len(pixels))
            return self._unit_rows(torch.nn.functional.normalize(out, dim=1).cpu().numpy(), len(batch))

    def encode_tensors(self, x, *, batch_size: Optional[int] = None) -> np.ndarray:
        """Embed already decoded images.

        Parameters
        ----------
        x : Tensor or ndarray of shape (n, 3, H, W)
            ``uint8`` pixels (0..255, already at ``input_size``: normalised inside the model call,
            on the CPU runtime in use or the device) or float values already preprocessed by
            ``self.transform`` (PyTorch).

        Returns
        -------
        ndarray of shape (n, dim), float32, rows L2-normalised.
        """
        import torch

        x = torch.as_tensor(x)
        if x.ndim != 4 or x.shape[1] != 3:
            raise SibscanError(f"encode_tensors takes an (n, 3, H, W) batch, got shape {tuple(x.shape)}")
        bs = int(batch_size or self.batch_size)
        if not self.on_cuda and x.dtype == torch.uint8 and tuple(x.shape[2:]) == tuple(self.input_size):
            model = self.cpu_model()
            pixels = x.numpy()
            out = np.empty((len(x), self.dim), np.float32)
            for start in range(0, len(x), bs):
                out[start:start + bs] = model(pixels[start:start + bs])
            return self._unit_rows(out, len(x))
        if self.on_cuda and x.device.type == "cpu" and not x.is_pinned():
            x = x.pin_memory()
        with torch.inference_mode():
            out = torch.cat([self._forward_device(x[s:s + bs]).float() for s in range(0, len(x), bs)]) if len(x) else \
                torch.zeros((0, self.dim))
            return self._unit_rows(torch.nn.functional.normalize(out, dim=1).cpu().numpy(), len(x))

    def _unit_rows(self, out: np.ndarray, n: int) -> np.ndarray:
        """``out`` checked for shape, as float32 rows of unit length."""
        if out.shape != (n, self.dim):
            raise SibscanError(f"encoder {self.name!r} produced an array of shape {out.shape}, "
                               f"expected {(n, self.dim)}")
        out = np.asarray(out, dtype=np.float32)
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return np.ascontiguousarray(out)

    def _forward_device(self, x):
        import torch

        x = x.to(self.device, non_blocking=True)
        if x.dtype == torch.uint8:
            mean = torch.tensor(self.mean, device=x.device).view(1, 3, 1, 1) * 255.0
            std = torch.tensor(self.std, device=x.device).view(1, 3, 1, 1) * 255.0
            x = (x.float() - mean) / std
        with self.autocast():
            return self._forward(x)

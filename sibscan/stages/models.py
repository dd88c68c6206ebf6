"""The models stage of a scan: the encoder (a train index's own, or built), the verifier and the
candidate views they imply, for :func:`sibscan.scan.run_scan` in one call (:func:`build_models`).
"""
from __future__ import annotations

from typing import Dict, NamedTuple, Optional, Tuple

from ..config import ScanConfig
from ..encoders import Encoder, build_encoder
from ..errors import SibscanError
from ..index import TrainIndex
from ..items import Items
from ..verify import Verifier, build_verifier
from .views import resolve_views

__all__ = ["Models", "build_models"]


class Models(NamedTuple):
    """What the models stage gives the scan: the encoder, the verifier (None when the candidates are
    not verified) and the extra candidate views (:func:`sibscan.stages.views.resolve_views`)."""

    encoder: Encoder
    verifier: Optional[Verifier]
    views: Tuple[str, ...]


def build_models(cfg: ScanConfig, index: Optional[TrainIndex], splits: Dict[str, Items], clock) -> Models:
    """The encoder, verifier and views of a scan; model imports and weights timed as ``models`` by ``clock``.

    A cascade asked for items other than images is refused first, before any model is built."""
    train = splits["train"]
    if cfg.verification.cascade and train.modality != "image":
        raise SibscanError(f"the verification cascade is for images (its cheap stage is the windows view), "
                           f"not {train.modality} items; drop --cascade")
    with clock("models"):  # imports (torch, timm: seconds in a fresh process) and weights
        encoder = index.encoder(device=cfg.encoding.device) if index is not None else build_encoder(cfg.encoding, train)
        verifier = build_verifier(cfg.verification, train.modality, cfg.encoding.device, cfg.output.progress)
    return Models(encoder, verifier, resolve_views(cfg.search, train.modality, verifier is not None, encoder.name))

"""Encoders: one registry, pluggable classes (see :mod:`sibscan.encoders.base`), built from options."""
from .base import Encoder, encoder_class, get_encoder, l2_normalise, list_encoders, register_encoder
from .build import build_encoder, default_encoder, encoder_kwargs

__all__ = ["Encoder", "build_encoder", "default_encoder", "encoder_class", "encoder_kwargs", "get_encoder",
           "l2_normalise", "list_encoders", "register_encoder"]

"""Encoders: one registry, pluggable classes (see :mod:`sibscan.encoders.base`)."""
from .base import Encoder, encoder_class, get_encoder, l2_normalise, list_encoders, register_encoder

__all__ = ["Encoder", "encoder_class", "get_encoder", "l2_normalise", "list_encoders", "register_encoder"]

"""Verifiers: re-score candidate pairs with a transform-invariant similarity."""
from .base import (
    Verifier,
    VerifyResult,
    default_verifier,
    get_verifier,
    list_verifiers,
    register_verifier,
    verifier_class,
)
from .build import build_verifier

__all__ = [
    "Verifier", "VerifyResult", "build_verifier", "default_verifier", "get_verifier", "list_verifiers",
    "register_verifier", "verifier_class",
]

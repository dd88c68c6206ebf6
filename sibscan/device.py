"""One device policy: ``"auto" | "cpu" | "cuda"`` resolved once, loudly when CUDA is asked for."""
from __future__ import annotations

from typing import Optional

from .errors import SibscanError

__all__ = ["DEVICES", "check_device_name", "cuda_available", "resolve_device"]

DEVICES = ("auto", "cpu", "cuda")


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def check_device_name(device: Optional[str]) -> str:
    """``device`` (None meaning ``"auto"``) when it names a known device, ``"cuda:1"`` included."""
    device = "auto" if device is None else device
    if device.split(":")[0] not in DEVICES:
        raise SibscanError(f"unknown device {device!r}; available: {', '.join(DEVICES)}")
    return device


def resolve_device(device: str = "auto") -> str:
    """Return ``"cpu"`` or ``"cuda"`` (possibly ``"cuda:N"``).

    ``"auto"`` picks CUDA when torch sees a GPU; ``"cuda"`` where there is none raises
    :class:`SibscanError` with the reason.
    """
    device = check_device_name(device)
    base = device.split(":")[0]
    if base == "cpu":
        return "cpu"
    if base == "auto":
        return "cuda" if cuda_available() else "cpu"
    try:
        import torch
    except ImportError:
        raise SibscanError(f"--device {device!r} needs torch with CUDA; install it with: pip install 'sibscan[gpu]'")
    if not torch.cuda.is_available():
        reason = "torch was built without CUDA" if torch.version.cuda is None else "no CUDA GPU is visible"
        raise SibscanError(f"--device {device!r} was asked for but {reason}; use --device 'cpu' or 'auto'")
    return device

"""One device policy: ``"auto" | "cpu" | "cuda"`` resolved once, loudly when CUDA is asked for."""
from __future__ import annotations

from .errors import SibscanError

__all__ = ["resolve_device", "cuda_available"]

DEVICES = ("auto", "cpu", "cuda")


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def resolve_device(device: str = "auto") -> str:
    """Return ``"cpu"`` or ``"cuda"`` (possibly ``"cuda:N"``).

    ``"auto"`` picks CUDA when torch sees a GPU; ``"cuda"`` where there is none raises
    :class:`SibscanError` with the reason.
    """
    if device is None:
        device = "auto"
    base = device.split(":")[0]
    if base not in DEVICES:
        raise SibscanError(f"unknown device {device!r}; available: {', '.join(DEVICES)}")
    if base == "cpu":
        return "cpu"
    if base == "auto":
        return "cuda" if cuda_available() else "cpu"
    try:
        import torch
    except ImportError:
        raise SibscanError("--device cuda needs torch with CUDA; install it with: pip install 'sibscan[gpu]'")
    if not torch.cuda.is_available():
        reason = "torch was built without CUDA" if torch.version.cuda is None else "no CUDA GPU is visible"
        raise SibscanError(f"--device cuda was asked for but {reason}; use --device cpu or auto")
    return device

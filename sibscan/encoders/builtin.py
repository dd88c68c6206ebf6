"""Import the built-in encoder modules so that they register themselves.

Heavy dependencies (torch, open_clip, sentence-transformers, timm) are imported lazily inside each
encoder, so importing this module is cheap.
"""
import importlib

_MODULES = ("pixels", "phash", "ngram", "minhash", "numeric", "clip", "minilm", "effnet")

for _m in _MODULES:
    try:
        importlib.import_module(f"{__package__}.{_m}")
    except ModuleNotFoundError as _exc:  # module not written yet during development
        if _exc.name != f"{__package__}.{_m}":
            raise

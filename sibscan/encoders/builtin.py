"""Import the built-in encoder modules so that they register themselves.

Heavy dependencies (torch, open_clip, sentence-transformers, timm) are imported lazily inside each
encoder, so importing this module is cheap.
"""
from . import clip, effnet, minhash, minilm, ngram, numeric, phash, pixels  # noqa: F401

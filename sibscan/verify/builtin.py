"""Import the built-in verifier modules so that they register themselves."""
from . import imagematch, images, series, text  # noqa: F401

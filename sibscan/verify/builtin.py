"""Import the built-in verifier modules so that they register themselves."""
from . import imagefuse, imagematch, images, series, text  # noqa: F401

"""Import the built-in verifier modules so that they register themselves."""
from . import images, series, text  # noqa: F401

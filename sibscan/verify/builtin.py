"""Import the built-in verifier modules so that they register themselves."""
import importlib

_MODULES = ("images", "text", "series")

for _m in _MODULES:
    try:
        importlib.import_module(f"{__package__}.{_m}")
    except ModuleNotFoundError as _exc:  # module not written yet during development
        if _exc.name != f"{__package__}.{_m}":
            raise

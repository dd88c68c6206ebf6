"""Command-line flags generated from the typed option groups of :mod:`sibscan.options`, once.

``sibscan scan`` and ``sibscan index build`` take the same load and encoder flags because both are
made here from the same fields (flag names, help, default shown as ``[default: 10]``, no value
metavar on a boolean flag, a fixed set of values as a parser choice, the group's help panel).  A flag
the user did not give reaches the command as None ("not given", read from click's parameter source),
so a TOML config file below the flags keeps its values.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

import typer

from ..errors import SibscanError
from ..options import PANELS, check_value, flag_of
from ..progress import message
from ._common import choice

try:  # newer Typer runs on its own copy of click, whose context click itself cannot see: ask that copy
    from typer._click.core import ParameterSource
    from typer._click.globals import get_current_context
except ImportError:  # an older Typer runs on click itself
    from click import get_current_context
    from click.core import ParameterSource

__all__ = ["declared_options", "with_options"]


def _cli_type(hint: Any) -> type:
    """The type Typer parses a field as: its non-None type; a tuple (``--directions``) as a comma list."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    base = args[0] if typing.get_origin(hint) is typing.Union else hint
    return str if typing.get_origin(base) is tuple else base


def _panel(group: type, field: dataclasses.Field) -> str:
    """The help panel of ``field``: its own, else its group's."""
    return field.metadata.get("panel") or group.PANEL


#: the suffix of the parameter that takes a flag's old name (``opt(old=...)``)
_OLD = "__old"


def _field_name(parameter_name: str) -> str:
    """The field a generated parameter belongs to (its old name's parameter: the same field)."""
    return parameter_name[:-len(_OLD)] if parameter_name.endswith(_OLD) else parameter_name


def _parameter(group: type, field: dataclasses.Field, hint: Any, hidden: bool = False) -> List[inspect.Parameter]:
    """The field as a Typer option parameter, and one hidden parameter for its old names, if any."""
    meta = field.metadata
    kind = _cli_type(hint)
    cli_kind = kind if meta.get("choices") is None else choice(meta["choices"])  # the parser refuses others
    flags: Sequence[str] = meta["flags"]
    toggle = kind is bool and meta["toggle"]
    if toggle:
        long = flags[0]
        flags = (f"{long}/--no-{long[2:]}", *flags[1:])
    default = field.default if field.default is not dataclasses.MISSING else None  # a list: none given
    shown = ",".join(default) if isinstance(default, tuple) else default
    metavar = "" if kind is bool else meta.get("metavar")
    option = typer.Option(shown, *flags, help=meta["help"], hidden=hidden, rich_help_panel=_panel(group, field),
                          show_default=shown not in (None, ...) and (kind is not bool or toggle),
                          **({"metavar": metavar} if metavar is not None else {}))
    params = [inspect.Parameter(field.name, inspect.Parameter.KEYWORD_ONLY, annotation=Optional[cli_kind],
                                default=option)]
    if meta.get("old"):
        if toggle:
            raise TypeError(f"{field.name}: a toggle keeps its name")  # --x/--no-x: no old name to carry
        old = typer.Option(None, *meta["old"], hidden=True, help=f"Old name of {flags[0]}.")
        params.append(inspect.Parameter(field.name + _OLD, inspect.Parameter.KEYWORD_ONLY,
                                        annotation=Optional[cli_kind], default=old))
    return params


def option_parameters(group: type, *, only: Optional[Iterable[str]] = None, exclude: Iterable[str] = (),
                      hidden: Iterable[str] = ()) -> List[inspect.Parameter]:
    """The group's fields as Typer option parameters (``only`` / ``exclude`` pick fields by name;
    ``hidden`` ones still work but are left out of ``--help``; a config's field that declares no flag, a
    value the command line gives in another shape, is not one)."""
    hints = typing.get_type_hints(group)
    keep = None if only is None else set(only)
    return [p for f in dataclasses.fields(group) if (keep is None or f.name in keep) and f.name not in set(exclude)
            and "flags" in f.metadata for p in _parameter(group, f, hints[f.name], f.name in set(hidden))]


def _take_old_names(values: Dict[str, Any], owners: Dict[str, type]) -> None:
    """Move a value given under a flag's old name to the flag, with a note naming the new flag."""
    for name in [n for n in values if n.endswith(_OLD)]:
        value, new = values.pop(name), _field_name(name)
        if value is None:
            continue
        meta = owners[new].__dataclass_fields__[new].metadata
        old_flag, new_flag = meta["old"][0], flag_of(owners[new], new)
        if _given(new, values[new]) is not None:
            raise SibscanError(f"{old_flag} is the old name of {new_flag}; give {new_flag} once")
        message(f"note: {old_flag} is now {new_flag} (the old name goes in the next release)")
        values[new] = value


def _encoder_names() -> List[str]:
    from ..encoders.base import list_encoders

    return [c.name for c in list_encoders()]


def _verifier_names() -> List[str]:
    from ..verify.base import list_verifiers

    return [c.name for c in list_verifiers()]


#: options whose values are the names in a plug-in registry: too open a set for a choice (a plug-in
#: registers more), so the parser takes any string, ScanConfig.check refuses an unknown one with the
#: list, and ``--help`` lists them (looked up when help is shown, not on every command line)
REGISTERED = {"encoder": _encoder_names, "verifier": _verifier_names}


def _panel_of(parameter: inspect.Parameter) -> Optional[str]:
    """The help panel of a Typer parameter, when it is one of PANELS."""
    panel = getattr(parameter.default, "rich_help_panel", None)
    return panel if panel in PANELS else None


def _given(name: str, value: Any) -> Any:
    """``value`` when the user gave the flag, None when it is the default (so a config file below wins)."""
    ctx = get_current_context(silent=True)
    if ctx is None:
        return value
    source = ctx.get_parameter_source(name)
    return None if source in (None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP) else value


def with_options(*groups: Tuple[type, Dict[str, Any]], spread: bool = False) -> Callable[[Callable], Callable]:
    """Decorator: add the flags of option ``groups`` to a Typer command.

    Each entry is ``(group class, {"only": names} or {"exclude": names} or {})``, optionally with
    ``"hidden": names``.  The command keeps its own parameters (its arguments) and receives the generated
    ones as one dict ``options`` (name -> value, None where the flag was not given: a config file below
    keeps its values), or with ``spread`` as keyword arguments of those names with their values as parsed
    (its own signature lists them as plain ``name=None`` keywords, no Typer option).  Every value is
    checked against its field's constraint (:func:`sibscan.options.check_value`) before the command runs,
    and a value given under a field's old name is moved to the field with a note.
    """
    owners: Dict[str, type] = {}  # the group of each field taken (two groups may name a field alike)
    generated: List[inspect.Parameter] = []
    for group, pick in groups:
        for p in option_parameters(group, **pick):
            generated.append(p)
            owners[_field_name(p.name)] = group

    def decorate(fn: Callable) -> Callable:
        own = inspect.signature(fn)
        hints = typing.get_type_hints(fn)
        names = {p.name for p in generated}
        own_params = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in own.parameters.values()
                      if p.name != "options" and p.name not in names]

        @functools.wraps(fn)
        def command(**kwargs):
            values = {k: kwargs.pop(k) for k in list(kwargs) if k in names}
            _take_old_names(values, owners)
            for name, value in values.items():
                check_value(owners[name], name, value)
            if spread:
                return fn(**kwargs, **values)
            return fn(**kwargs, options={k: _given(k, v) for k, v in values.items()})

        # --help shows the panels in the order of PANELS (Typer: in the order of their first option); the
        # command's own options outside them first.  Typer passes every value by keyword.
        params = sorted(own_params + generated, key=lambda p: 1 + PANELS.index(_panel_of(p)) if _panel_of(p) else 0)
        params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params]
        command.registered_names = {p.name: REGISTERED[p.name] for p in generated if p.name in REGISTERED}
        command.declared_options = {p.name: owners[_field_name(p.name)] for p in generated}
        command.__signature__ = inspect.Signature(params)
        command.__annotations__ = {p.name: p.annotation for p in params}
        del command.__wrapped__  # Typer must read the generated signature, not fn's
        return command

    return decorate


def declared_options(command) -> Dict[str, type]:
    """The options of a click ``command`` made by :func:`with_options`, by parameter name -> its option group
    (the registry the test of every command's parameters reads: an option missing here was declared by hand)."""
    return dict(getattr(command.callback, "declared_options", {}))

"""The walk of a function through sibscan's own code: the rooms it enters, how often it climbs back
into a room it came from, and what the start's own room calls in the others.

``python -m tests._walk sibscan.scan:run_scan`` prints the walk of a scan; tests/test_architecture.py
holds it to its bounds (issue 33).  The walk is static (the source is parsed, nothing is imported or run):

* It starts at the function named and follows, depth-first in source order, every call whose target it
  can name: a function, class or method *defined in sibscan's own modules*.  A name is resolved through
  the module's imports (at its top and inside the function; a package ``__init__``'s re-exports followed
  to the definition), ``mod.fn`` through an imported module, ``self.m()`` / ``cls.m()`` through the class
  and its sibscan bases, and ``x.m()`` where the class of ``x`` is known: a parameter's annotation
  (``Optional[X]`` is ``X``), ``x = X(...)``, ``x = f(...)`` / ``a, b = f(...)`` by ``f``'s return
  annotation, ``with X(...) as x``.  Calling a class enters its ``__init__`` / ``__post_init__``,
  ``with`` on an instance its ``__enter__`` / ``__exit__``, reading a property of a known instance
  calls it.  Nested functions and lambdas are part of the function they are written in.  Each function
  is walked once; a second call to it still counts as a climb when it is one.
* A function handed to a sibscan function as an argument (a sibscan function, or what a sibscan factory
  returned: the scan's ``clock``) and called there through its parameter is a call from there into the
  function's module; handed on, it is followed further.
* Not followed, because a static reading cannot name them: methods of an object whose class is not
  known (the encoder or verifier a registry returns), callbacks from outside sibscan (the CLI's
  ``echo``), ``getattr``, Ray's remote tasks.  Every branch is followed, so the walk is that of every
  configuration of a scan at once (all loaders, a train index or not, Ray or not).
* A ROOM is a folder by stage, as docs/architecture.md names them: a package below ``sibscan``
  (``sibscan.stages``, ``sibscan.search``, ``sibscan.store``, ``sibscan.kernels``, …) or a module at the
  top (``sibscan.scan``, ``sibscan.config``) (:func:`room_of`).  The modules entered are listed as well.
  Rooms are folders, not files, because the project keeps modules small (one topic each, ~400 lines):
  the number of files a scan's code spans says how finely it is cut; the folders, which stages it
  crosses.  And between files a climb needs a function handed down (``test_no_import_cycles`` forbids
  A → B → A imports), while a folder can hold both ends of one by imports alone (``store.cache`` →
  ``encoders`` → ``fingerprint`` → ``store.diskarray``).
* A CLIMB BACK is a call from a function in room B into room A when A is already on the call stack
  below B (A → … → B → A): the back-and-forth between rooms.  Each call site (caller, callee) counts
  once; a call within one room is never a climb.
* CALLS OUT are the distinct functions of other rooms that the start's own room calls (for ``run_scan``:
  one call per stage, and the manifest's bookkeeping).
* Left out, as the floor every layer stands on: the modules of layer 0 ("foundation") of
  docs/architecture.md's layer table (errors, progress, atomic writes, number printing, the lock, the
  version, the run record, disk arrays, key buckets, row ids, how Ray is started).  They call nothing
  above them, and every stage may use them: a call into one is no room, no climb and no call out, and
  the walk does not go into them.

``walk(spec)`` returns a :class:`Walk`.
"""
from __future__ import annotations

import ast
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

from tests.test_architecture import MODULES, placement


def foundation() -> List[str]:
    """The modules of layer 0 of docs/architecture.md (the walk's leaves), as the layer table places them."""
    placed, _ = placement()
    return sorted(m for m, (number, _) in placed.items() if number == 0)


def room_of(module: str) -> str:
    """The room of a module: its package below ``sibscan`` (``sibscan.stages.views`` -> ``sibscan.stages``),
    or the module itself at the top (``sibscan.scan``)."""
    return ".".join(module.split(".")[:2])


@dataclass(frozen=True)
class Func:
    """A function or method: its module, its qualified name, and its class when it is a method."""

    module: str
    name: str
    cls: Optional["Klass"] = field(default=None, compare=False, hash=False)

    def __str__(self) -> str:
        return f"{self.module}:{self.name}"


@dataclass(frozen=True)
class Klass:
    module: str
    name: str

    def __str__(self) -> str:
        return f"{self.module}:{self.name}"


@dataclass(frozen=True)
class Instance:
    cls: Klass


@dataclass(frozen=True)
class Module:
    name: str


Target = Union[Func, Klass, Instance, Module]


class _Source:
    """One module parsed: its top-level definitions and imports."""

    def __init__(self, name: str):
        self.name, path = name, MODULES[name]
        self.package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        self.tree = ast.parse(path.read_text(encoding="utf-8"))
        self.defs: Dict[str, ast.AST] = {}
        self.imports: Dict[str, str] = {}
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.defs[node.name] = node
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                self.imports.update(_imports(node, self.package))
            elif isinstance(node, ast.If):  # `if TYPE_CHECKING:` and the like
                for sub in ast.walk(node):
                    if isinstance(sub, (ast.Import, ast.ImportFrom)):
                        self.imports.update(_imports(sub, self.package))


def _imports(node: ast.AST, package: str) -> Dict[str, str]:
    """``{local name: absolute dotted name}`` of an import statement."""
    if isinstance(node, ast.Import):
        return {(a.asname or a.name.split(".")[0]): (a.name if a.asname else a.name.split(".")[0]) for a in node.names}
    base = node.module or ""
    if node.level:
        parent = package.split(".")
        parent = parent[: len(parent) - node.level + 1]
        base = ".".join(parent + ([base] if base else []))
    return {(a.asname or a.name): f"{base}.{a.name}" for a in node.names}


@lru_cache(maxsize=None)
def _source(name: str) -> _Source:
    return _Source(name)


def resolve(dotted: str, _seen: frozenset = frozenset()) -> Optional[Target]:
    """What an absolute dotted name is, when it is defined in sibscan: a module, a class, a function
    or a method (re-exports followed to the definition); None otherwise."""
    if not dotted.startswith("sibscan") or dotted in _seen:
        return None
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        mod = ".".join(parts[:cut])
        if mod in MODULES:
            break
    else:
        return None
    target: Target = Module(mod)
    for attr in parts[cut:]:
        target = _attribute(target, attr, _seen | {dotted})
        if target is None:
            return None
    return target


def _attribute(target: Target, attr: str, seen: frozenset = frozenset()) -> Optional[Target]:
    if isinstance(target, Module):
        if f"{target.name}.{attr}" in MODULES:
            return Module(f"{target.name}.{attr}")
        src = _source(target.name)
        node = src.defs.get(attr)
        if isinstance(node, ast.ClassDef):
            return Klass(target.name, attr)
        if node is not None:
            return Func(target.name, attr)
        if attr in src.imports:
            return resolve(src.imports[attr], seen)
        return None
    if isinstance(target, (Klass, Instance)):
        return method(target if isinstance(target, Klass) else target.cls, attr)
    return None


def _class_node(k: Klass) -> ast.ClassDef:
    return _source(k.module).defs[k.name]


def method(k: Klass, name: str, _depth: int = 0) -> Optional[Func]:
    """``k.name`` defined in ``k`` or one of its sibscan bases, as a :class:`Func`."""
    if _depth > 10:
        return None
    node = _class_node(k)
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == name:
            return Func(k.module, f"{k.name}.{name}", k)
    for base in node.bases:
        b = _Scope(_source(k.module), {}).evaluate(base)
        if isinstance(b, Klass):
            found = method(b, name, _depth + 1)
            if found is not None:
                return found
    return None


def _function_node(f: Func) -> ast.AST:
    src = _source(f.module)
    if f.cls is None:
        return src.defs[f.name]
    meth = f.name.split(".", 1)[1]
    return next(i for i in _class_node(f.cls).body if isinstance(i, (ast.FunctionDef, ast.AsyncFunctionDef))
                and i.name == meth)


def _is_property(f: Func) -> bool:
    decorators = getattr(_function_node(f), "decorator_list", [])
    return any((isinstance(d, ast.Name) and d.id in ("property", "cached_property"))
               or (isinstance(d, ast.Attribute) and d.attr == "cached_property") for d in decorators)


def _annotation_class(scope: "_Scope", ann: Optional[ast.AST]) -> Optional[Klass]:
    """The sibscan class an annotation names (``X``, ``"X"``, ``Optional[X]``, ``X | None``)."""
    if ann is None:
        return None
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        try:
            ann = ast.parse(ann.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(ann, ast.Subscript) and isinstance(ann.value, (ast.Name, ast.Attribute)) \
            and _last(ann.value) == "Optional":
        return _annotation_class(scope, ann.slice)
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        return _annotation_class(scope, ann.left) or _annotation_class(scope, ann.right)
    t = scope.evaluate(ann)
    return t if isinstance(t, Klass) else None


def _returns(scope: "_Scope", f: Func) -> Optional[Union[Klass, Tuple[Optional[Klass], ...]]]:
    """The class (or tuple of classes) a function's return annotation names."""
    node = _function_node(f)
    ann = getattr(node, "returns", None)
    own = _Scope(_source(f.module), {}, f.cls)
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):
        try:
            ann = ast.parse(ann.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(ann, ast.Subscript) and _last(ann.value) in ("Tuple", "tuple") and isinstance(ann.slice, ast.Tuple):
        return tuple(_annotation_class(own, e) for e in ann.slice.elts)
    return _annotation_class(own, ann)


def _bound_names(node: ast.AST) -> set:
    """The names a function binds (parameters, assignments, loop and ``with`` targets, nested defs)."""
    names = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            names.add(sub.id)
        elif isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and sub is not node:
            names.add(sub.name)
    return names


def _returns_nested_function(f: Func) -> bool:
    """Whether ``f`` returns a function written inside it (a factory: ``progress.timed_stages``)."""
    node = _function_node(f)
    nested = {d.name for d in ast.walk(node)
              if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d is not node}
    return any(isinstance(r, ast.Return) and (isinstance(r.value, ast.Lambda)
                                              or (isinstance(r.value, ast.Name) and r.value.id in nested))
               for r in ast.walk(node))


def _last(node: ast.AST) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


class _Scope:
    """Names visible in one function: its module's definitions and imports, its own imports, the
    classes of its variables where known."""

    def __init__(self, src: _Source, local_imports: Dict[str, str], cls: Optional[Klass] = None):
        self.src, self.local_imports, self.cls = src, local_imports, cls
        self.types: Dict[str, Klass] = {}
        self.callbacks: Dict[str, Func] = {}  # names bound to sibscan code handed around as a value
        self.locals: set = set()  # names bound in the function: they hide the module's names

    def name(self, ident: str) -> Optional[Target]:
        if ident in self.callbacks:
            return self.callbacks[ident]
        if ident in self.types:
            return Instance(self.types[ident])
        if ident in ("self", "cls") and self.cls is not None:
            return Instance(self.cls) if ident == "self" else self.cls
        if ident in self.local_imports:
            return resolve(self.local_imports[ident])
        if ident in self.locals:
            return None
        return _attribute(Module(self.src.name), ident)

    def evaluate(self, expr: ast.AST) -> Optional[Target]:
        if isinstance(expr, ast.Name):
            return self.name(expr.id)
        if isinstance(expr, ast.Attribute):
            base = self.evaluate(expr.value)
            return None if base is None else _attribute(base, expr.attr)
        if isinstance(expr, ast.Call):
            callee = self.evaluate(expr.func)
            if isinstance(callee, Klass):
                return Instance(callee)
            if isinstance(callee, Func):
                r = _returns(self, callee)
                return Instance(r) if isinstance(r, Klass) else None
        return None


class _Walker:
    def __init__(self, leaves: Sequence[str], room: Callable[[str], str]):
        self.leaves, self.room = tuple(leaves), room
        self.rooms: List[str] = []
        self.modules: List[str] = []
        self.climbs: List[Tuple[str, str]] = []
        self.calls_out: List[str] = []  # what the start's room calls in the other rooms
        self.visited: set = set()
        self.bindings: Dict[Func, Dict[str, Func]] = {}  # callbacks handed to a function, by parameter
        self.stack: List[str] = []  # the rooms of the functions being walked, outermost first

    def left_out(self, module: str) -> bool:
        return any(module == leaf or module.startswith(leaf + ".") for leaf in self.leaves)

    def call(self, caller: Optional[Func], callee: Target) -> None:
        funcs: List[Func]
        if isinstance(callee, Klass):
            funcs = [m for m in (method(callee, "__init__"), method(callee, "__post_init__")) if m is not None]
            if not funcs:  # a class without code of its own (a dataclass): entering its room all the same
                self.enter(caller, callee.module, str(callee))
                return
        elif isinstance(callee, Func):
            funcs = [callee]
        else:
            return
        for f in funcs:
            self.enter(caller, f.module, str(f), f)

    def enter(self, caller: Optional[Func], module: str, label: str, f: Optional[Func] = None) -> None:
        if self.left_out(module):
            return
        if module not in self.modules:
            self.modules.append(module)
        module = self.room(module)
        here = self.stack[-1] if self.stack else None
        if self.stack and here == self.stack[0] and module != here and label not in self.calls_out:
            self.calls_out.append(label)
        if caller is not None and module != here and module in self.stack and (str(caller), label) not in self.climbs:
            self.climbs.append((str(caller), label))
        if module not in self.rooms:
            self.rooms.append(module)
        if f is None or f in self.visited:
            return
        self.visited.add(f)
        self.stack.append(module)
        try:
            self.walk_body(f)
        finally:
            self.stack.pop()

    def walk_body(self, f: Func) -> None:
        node = _function_node(f)
        src = _source(f.module)
        local = {}
        for sub in ast.walk(node):
            if isinstance(sub, (ast.Import, ast.ImportFrom)):
                local.update(_imports(sub, src.package))
        scope = _Scope(src, local, f.cls)
        args = node.args
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]:
            k = _annotation_class(scope, a.annotation)
            if k is not None:
                scope.types[a.arg] = k
        scope.locals = _bound_names(node) - set(local)
        scope.callbacks.update(self.bindings.get(f, {}))
        events = []
        for sub in ast.walk(node):
            if isinstance(sub, ast.Assign):
                self.assign(scope, sub.targets, sub.value)
            elif isinstance(sub, (ast.With, ast.AsyncWith)):
                for item in sub.items:
                    if isinstance(item.optional_vars, ast.Name):
                        t = scope.evaluate(item.context_expr)
                        if isinstance(t, Instance):
                            scope.types.setdefault(item.optional_vars.id, t.cls)
            if isinstance(sub, (ast.Call, ast.With, ast.AsyncWith, ast.Attribute)):
                events.append(sub)
        events.sort(key=lambda e: (e.lineno, e.col_offset))
        for e in events:
            if isinstance(e, ast.Call):
                t = scope.evaluate(e.func)
                if isinstance(t, Func):
                    self.bind(scope, t, e)
                if isinstance(t, (Func, Klass)):
                    self.call(f, t)
            elif isinstance(e, (ast.With, ast.AsyncWith)):
                for item in e.items:
                    t = scope.evaluate(item.context_expr)
                    if isinstance(t, Instance):
                        for name in ("__enter__", "__exit__"):
                            m = method(t.cls, name)
                            if m is not None:
                                self.call(f, m)
            elif isinstance(e.ctx, ast.Load):  # a property read of a known instance
                base = scope.evaluate(e.value)
                if isinstance(base, Instance):
                    m = method(base.cls, e.attr)
                    if m is not None and _is_property(m):
                        self.call(f, m)

    def bind(self, scope: _Scope, callee: Func, call: ast.Call) -> None:
        """Remember the sibscan code ``call`` hands ``callee`` as arguments (a function, or what a factory
        returned), by the parameter that receives it: calling that parameter there calls this code."""
        if callee in self.visited or callee in self.bindings:
            return
        params = _function_node(callee).args
        positional = [a.arg for a in [*params.posonlyargs, *params.args]][1 if callee.cls is not None else 0:]
        handed = {}
        for param, arg in [*zip(positional, call.args), *((k.arg, k.value) for k in call.keywords if k.arg)]:
            value = scope.evaluate(arg) if isinstance(arg, (ast.Name, ast.Attribute)) else None
            if isinstance(value, Func):
                handed[param] = value
        if handed:
            self.bindings[callee] = handed

    def assign(self, scope: _Scope, targets, value: ast.AST) -> None:
        for target in targets:
            if isinstance(target, ast.Name) and isinstance(value, ast.Call):
                factory = scope.evaluate(value.func)
                if isinstance(factory, Func) and _returns_nested_function(factory):
                    scope.callbacks.setdefault(target.id, factory)
                    continue
            if isinstance(target, ast.Name):
                t = scope.evaluate(value)
                if isinstance(t, Instance):
                    scope.types.setdefault(target.id, t.cls)
            elif isinstance(target, ast.Tuple) and isinstance(value, ast.Call):
                callee = scope.evaluate(value.func)
                r = _returns(scope, callee) if isinstance(callee, Func) else None
                if isinstance(r, tuple) and len(r) == len(target.elts):
                    for elt, k in zip(target.elts, r):
                        if isinstance(elt, ast.Name) and k is not None:
                            scope.types.setdefault(elt.id, k)


@dataclass
class Walk:
    """What :func:`walk` found (see the module docstring for what each counts)."""

    start: str
    rooms: List[str]  # in the order entered
    modules: List[str]  # the modules entered, in that order
    climbs: List[Tuple[str, str]]  # (caller, callee)
    calls_out: List[str]
    functions: int
    left_out: List[str]

    def render(self) -> str:
        lines = [f"walk of {self.start}: {len(self.rooms)} rooms, {len(self.climbs)} climbs back, "
                 f"{len(self.calls_out)} calls out of its room ({len(self.modules)} modules, "
                 f"{self.functions} functions walked)",
                 f"left out (layer 0, foundation): {', '.join(self.left_out)}", "rooms, in the order entered:"]
        lines += [f"  {i:2d}. {room}: {', '.join(m for m in self.modules if self.room_of(m) == room)}"
                  for i, room in enumerate(self.rooms, 1)]
        lines.append("climbs back (caller -> callee, into a room already on the call stack):")
        lines += [f"  {caller} -> {callee}" for caller, callee in self.climbs] or ["  none"]
        lines.append(f"calls out of {room_of(self.start.partition(':')[0])}, in order:")
        lines += [f"  {callee}" for callee in self.calls_out] or ["  none"]
        return "\n".join(lines)

    @staticmethod
    def room_of(module: str) -> str:
        return room_of(module)


def walk(spec: str, leaves: Optional[Sequence[str]] = None, room: Callable[[str], str] = room_of) -> Walk:
    """The walk from ``spec`` (``"sibscan.scan:run_scan"``, or ``"module:Class.method"``); ``leaves``
    (default: :func:`foundation`) are left out, ``room`` maps a module to its room."""
    module, _, name = spec.partition(":")
    if module not in MODULES:
        raise ValueError(f"no sibscan module {module!r}")
    start = resolve(f"{module}.{name}")
    if not isinstance(start, (Func, Klass)):
        raise ValueError(f"{spec!r} names no function or class defined in {module}")
    leaves = foundation() if leaves is None else list(leaves)
    w = _Walker(leaves, room)
    w.call(None, start)
    return Walk(spec, w.rooms, w.modules, w.climbs, w.calls_out, len(w.visited), leaves)


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m tests._walk MODULE:FUNCTION   (e.g. sibscan.scan:run_scan)", file=sys.stderr)
        return 1
    try:
        print(walk(argv[0]).render())
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Progress of long work, on a terminal and off one: the one place that decides how it is shown.

* On a terminal (or in a notebook) a :func:`bar` is a tqdm bar whose name says what it does
  ("random-pair baseline: verify images 2,000/20,000").
* Off a terminal (``nohup``, CI, stderr redirected to a file) there are no bars: :func:`stage`
  writes one line as each stage starts, and every bar that is still running writes one line every
  :data:`INTERVAL_S` seconds with its count, items/s and ETA (a clock thread writes it, so a
  single slow batch cannot silence it), and a closing line when it ran that long.
* :func:`set_quiet` (``--quiet``) silences all of it, and :func:`message` (the CLI's notes on
  stderr) too; results on stdout are never affected.

Bars can be nested: :func:`task` names what a group of bars is for ("random-pair baseline"), and
its name is put in front of theirs, so a verifier's "verify images" bar says whose pairs it scores.
"""
from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from typing import Callable, ContextManager, Dict, Iterator, List, Optional

__all__ = ["INTERVAL_S", "Bar", "bar", "format_line", "is_quiet", "message", "quiet", "set_quiet", "stage", "task",
           "timed_stages"]

#: seconds between progress lines off a terminal (``SIBSCAN_PROGRESS_INTERVAL`` overrides it)
INTERVAL_S = 30.0

_state = {"quiet": False}
_tasks: List[str] = []
_lock = threading.Lock()


def set_quiet(quiet: bool) -> None:
    """Silence (True) or restore (False) every progress bar, stage line and message."""
    _state["quiet"] = bool(quiet)


def is_quiet() -> bool:
    return _state["quiet"]


@contextlib.contextmanager
def quiet(on: bool = True) -> Iterator[None]:
    """Silence everything :func:`set_quiet` does for the duration of a ``with`` block (``on=False``:
    change nothing), then restore what was set before: ``sibscan.scan(..., progress=False)``."""
    before = _state["quiet"]
    if on:
        _state["quiet"] = True
    try:
        yield
    finally:
        _state["quiet"] = before


def _interval() -> float:
    raw = os.environ.get("SIBSCAN_PROGRESS_INTERVAL")
    try:
        return max(float(raw), 0.01) if raw else INTERVAL_S
    except ValueError:
        return INTERVAL_S


def _on_terminal() -> bool:
    """A terminal or a notebook: somewhere a redrawn bar is read, not appended to a log."""
    if "ipykernel" in sys.modules:
        return True
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


def _write(line: str, unless: Optional[threading.Event] = None) -> bool:
    """Write one line to stderr; not when ``unless`` is set (checked under the lock that
    :meth:`Bar.close` sets it under, so a tick never lands after its bar's closing line).
    Returns whether the line was written."""
    with _lock:
        if unless is not None and unless.is_set():
            return False
        try:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
        except (AttributeError, ValueError):
            return False
        return True


def message(text: str) -> None:
    """A note for people on stderr (what is happening, where files went), unless quiet."""
    if not is_quiet():
        _write(text)


@contextlib.contextmanager
def task(name: str) -> Iterator[None]:
    """Name the bars opened inside: ``task("random-pair baseline")`` + ``bar(..., "verify images")``
    shows "random-pair baseline: verify images"."""
    _tasks.append(name)
    try:
        yield
    finally:
        _tasks.pop()


@contextlib.contextmanager
def stage(name: str) -> Iterator[None]:
    """One line as a stage of a long run starts, off a terminal (on one the bars say it)."""
    if not is_quiet() and not _on_terminal():
        _write(f"sibscan: {name} …")
    yield


def timed_stages(timings: Dict[str, float],
                 lines: Optional[Dict[str, str]] = None) -> Callable[[str], ContextManager[None]]:
    """The clock a run hands its stages: a context manager per stage that writes its :func:`stage` line
    (``lines[name]``, else the name) and adds its seconds to ``timings[name]``."""
    @contextlib.contextmanager
    def timed(name: str):
        t = time.perf_counter()
        with stage((lines or {}).get(name, name)):
            yield
        timings[name] = timings.get(name, 0.0) + time.perf_counter() - t

    return timed


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def format_line(desc: str, n: int, total: Optional[int], unit: str, elapsed: float, done: bool = False,
                note: str = "") -> str:
    """The off-terminal progress line: count, share, items/s and ETA (or the time taken), and a note."""
    rate = n / elapsed if elapsed > 0 else 0.0
    units = unit if unit.endswith("s") else unit + "s"
    count = f"{n:,}/{total:,} {units}" if total else f"{n:,} {units}"
    share = f" ({100 * n / total:.0f} %)" if total else ""
    tail = f" — {note}" if note else ""
    if done:
        return f"{desc}: {count} in {_duration(elapsed)} ({rate:,.1f} {units}/s){tail}"
    eta = f", ETA {_duration((total - n) / rate)}" if total and rate > 0 else ""
    return f"{desc}: {count}{share}, {rate:,.1f} {units}/s{eta}{tail}"


class Bar:
    """A progress bar (see the module docstring); use as a context manager, call :meth:`update`."""

    def __init__(self, total: Optional[int], desc: str, unit: str = "item", *, enabled: bool = True,
                 transient: bool = False, scale: bool = False):
        self.total = None if total is None else int(total)
        self.desc = ": ".join([*_tasks, desc])
        self.unit = unit
        self.n = 0
        self.note = ""
        self._t0 = time.perf_counter()
        self._tqdm = None
        self._stop: Optional[threading.Event] = None
        self._thread: Optional[threading.Thread] = None
        self._lines = 0
        if not enabled or is_quiet():
            return
        if _on_terminal():
            from tqdm.auto import tqdm

            fmt = None
            if self.total is not None and not scale:  # "random-pair baseline: verify images 2,000/20,000"
                fmt = "{desc} {n:,}/{total:,} {unit} |{bar}| {percentage:3.0f}% [{elapsed}<{remaining}, {rate_fmt}]"
            self._tqdm = tqdm(total=self.total, desc=self.desc, unit=unit, unit_scale=scale, file=sys.stderr,
                              leave=not transient, bar_format=fmt, dynamic_ncols=True)
        elif not transient:
            self._stop = threading.Event()
            self._every = _interval()
            self._thread = threading.Thread(target=self._tick, args=(self._stop, self._every), daemon=True,
                                            name=f"sibscan-progress-{self.desc}")
            self._thread.start()

    def _tick(self, stop: threading.Event, every: float) -> None:
        while not stop.wait(every):
            if _write(format_line(self.desc, self.n, self.total, self.unit, time.perf_counter() - self._t0,
                                  note=self.note), unless=stop):
                self._lines += 1

    @property
    def done(self) -> int:
        """Units done so far (the same as ``n``)."""
        return self.n

    def update(self, n: int = 1, note: Optional[str] = None) -> None:
        """Count ``n`` more units; ``note`` (the latest result, "run 3: 0.912") shows beside the count."""
        self.n += int(n)
        if note is not None:
            self.note = note
        if self._tqdm is not None:
            if note is not None:
                self._tqdm.set_postfix_str(note, refresh=False)
            self._tqdm.update(n)

    def close(self) -> None:
        if self._tqdm is not None:
            self._tqdm.close()
            self._tqdm = None
        if self._stop is not None:
            with _lock:  # a tick already past its wait writes before this or not at all
                self._stop.set()
            self._stop = None
            if self._thread is not None:  # its count of lines written is final once it has stopped
                self._thread.join(timeout=5.0)
                self._thread = None
            # it ran long enough to be reported (a tick cut off by close() counts): say that it finished
            if self._lines or time.perf_counter() - self._t0 >= self._every:
                _write(format_line(self.desc, self.n, self.total, self.unit, time.perf_counter() - self._t0, done=True,
                                   note=self.note))

    def __enter__(self) -> "Bar":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def bar(total: Optional[int], desc: str, unit: str = "item", *, enabled: bool = True, transient: bool = False,
        scale: bool = False) -> Bar:
    """A :class:`Bar` over ``total`` units named ``desc``.

    ``enabled=False`` (``--no-progress``) shows nothing; ``transient`` bars (inner loops, e.g. the
    decoding of one batch) show on a terminal only and leave no line behind; ``scale`` abbreviates
    large counts (search rows: "1.2M").
    """
    return Bar(total, desc, unit, enabled=enabled, transient=transient, scale=scale)

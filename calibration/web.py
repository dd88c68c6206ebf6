"""Label pairs in a local web page: stdlib ``http.server`` on 127.0.0.1, a random port and token.

Every request must carry the session token (``?t=...``); without it the answer is 403.  Pairs are
addressed by their index in the draw and items by ``left``/``right``: no path is ever taken from a
request, so nothing outside this scan's items can be served.  The page (``static/label.html``) is
self-contained — no CDN — and shows the score only after the pair is answered.

Endpoints: ``GET /`` (the page), ``GET /api/state``, ``GET /api/pair/<i>``,
``GET /api/item/<i>/<left|right>`` (an image re-encoded as PNG, scaled to fit 640 px),
``POST /api/answer`` (``{"index", "label"}``), ``POST /api/undo``.
"""
from __future__ import annotations

import hmac
import io
import json
import logging
import re
import secrets
import threading
import webbrowser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Optional
from urllib.parse import parse_qs, urlsplit

from sibscan.errors import SibscanError

from .session import LabelSession

__all__ = ["LabelServer", "run_web"]

log = logging.getLogger("sibscan.calibration.web")

STATIC = Path(__file__).resolve().parent / "static"
_MAX_SIDE = 640
_CSP = "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'"
_PAIR = re.compile(r"^/api/pair/(\d{1,9})$")
_ITEM = re.compile(r"^/api/item/(\d{1,9})/(left|right)$")


def _png(path: str) -> bytes:
    from sibscan.imageio import open_image

    im = open_image(path)
    im.thumbnail((_MAX_SIDE, _MAX_SIDE))
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    return buf.getvalue()


class _Handler(BaseHTTPRequestHandler):
    server: "_Server"
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt: str, *args) -> None:  # route the access log to logging, not stderr
        log.debug("%s " + fmt, self.address_string(), *args)

    # --- plumbing ------------------------------------------------------------------------------
    def _send(self, code: int, body: bytes, ctype: str) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Content-Security-Policy", _CSP)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, obj: dict, code: int = 200) -> None:
        self._send(code, json.dumps(obj).encode("utf-8"), "application/json")

    def _error(self, code: int, message: str) -> None:
        self._json({"error": message}, code)

    def _authorised(self) -> bool:
        token = parse_qs(urlsplit(self.path).query).get("t", [""])[0]
        return hmac.compare_digest(token.encode(), self.server.token.encode())

    # --- verbs ---------------------------------------------------------------------------------
    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        if not self._authorised():
            return self._error(403, "forbidden: open the URL printed by 'sibscan calibrate' (it carries the token)")
        route = urlsplit(self.path).path
        session = self.server.session
        try:
            if route in ("/", "/index.html"):
                return self._send(200, (STATIC / "label.html").read_bytes(), "text/html; charset=utf-8")
            if route == "/api/state":
                return self._json(session.state())
            m = _PAIR.match(route)
            if m:
                return self._json(session.view(int(m.group(1))))
            m = _ITEM.match(route)
            if m:
                return self._send(200, _png(session.image_path(int(m.group(1)), m.group(2))), "image/png")
        except SibscanError as exc:
            return self._error(404, str(exc))
        return self._error(404, "not found")

    def do_POST(self) -> None:  # noqa: N802
        if not self._authorised():
            return self._error(403, "forbidden")
        route = urlsplit(self.path).path
        session = self.server.session
        try:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(min(length, 4096)) or b"{}") if length else {}
        except (ValueError, json.JSONDecodeError):
            return self._error(400, "the body must be JSON")
        with self.server.lock:
            try:
                if route == "/api/answer":
                    if not isinstance(body, dict) or not isinstance(body.get("index"), int):
                        return self._error(400, "answer needs {\"index\": int, \"label\": same|different|skip}")
                    res = session.answer(body["index"], str(body.get("label")), source="web")
                    state = session.state()
                    self._json({**res, "state": state})
                    if state["next"] is None:
                        self.server.done.set()
                    return None
                if route == "/api/undo":
                    j = session.undo(source="web")
                    return self._json({"undone": j, "state": session.state()})
            except SibscanError as exc:
                return self._error(400, str(exc))
        return self._error(404, "not found")


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, addr, session: LabelSession, token: str):
        super().__init__(addr, _Handler)
        self.session = session
        self.token = token
        self.lock = threading.Lock()
        self.done = threading.Event()


class LabelServer:
    """The labelling page for one session, served from a background thread.

    Parameters
    ----------
    session : LabelSession
    port : int
        0 picks a free port.
    token : str, optional
        Default: 24 random bytes, URL-safe.
    """

    def __init__(self, session: LabelSession, port: int = 0, token: Optional[str] = None):
        self.token = token or secrets.token_urlsafe(24)
        self.httpd = _Server(("127.0.0.1", int(port)), session, self.token)
        self.thread: Optional[threading.Thread] = None

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/?t={self.token}"

    @property
    def done(self) -> threading.Event:
        return self.httpd.done

    def start(self) -> "LabelServer":
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="sibscan-label", daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "LabelServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def run_web(session: LabelSession, *, port: int = 0, open_browser: bool = True,
            echo: Callable[[str], None] = lambda s: None) -> str:
    """Serve the page until every pair is answered or Ctrl-C; returns ``"done"`` or ``"quit"``."""
    if session.next_pending() is None:
        return "done"
    with LabelServer(session, port=port) as server:
        opened = False
        if open_browser:
            try:
                opened = webbrowser.open(server.url)
            except webbrowser.Error:
                opened = False
        echo(("opened " if opened else "open this page to label: ") + server.url)
        echo("press Ctrl-C to stop; answers are saved as they are given")
        try:
            while not server.done.wait(0.5):
                pass
        except KeyboardInterrupt:
            echo("stopped; re-run the same command to continue where you left off")
            return "quit"
    return "done"

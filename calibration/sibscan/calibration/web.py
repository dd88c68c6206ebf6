"""Label pairs in a local web page: stdlib ``http.server`` on 127.0.0.1, a random port and token.

Every request must carry the session token (``?t=...``); without it the answer is 403.  Pairs are
addressed by their index in the draw and items by ``left``/``right``: no path is ever taken from a
request, so nothing outside this scan's items can be served.  The page (``static/label.html``) is
self-contained — no CDN — and shows the score only after the pair is answered.

Hardening beyond the token: the ``Host`` header must name this server (127.0.0.1 or localhost, this
port: a DNS-rebinding page cannot reach it), a POST's ``Origin``, when sent, must be this server; the
page may not be framed (``X-Frame-Options: DENY``, ``frame-ancestors 'none'``) and sends no
``Referer``; a POST body must state a ``Content-Length`` from 0 to 4096 bytes and send all of it
(nothing is read from a shorter or larger one); the listen backlog takes a burst of connections; a
client that disconnects is logged at debug level, not printed as a traceback.

Endpoints: ``GET /`` (the page), ``GET /api/state``, ``GET /api/pair/<i>``,
``GET /api/item/<i>/<left|right>`` (an image re-encoded as PNG, scaled to fit 640 px),
``POST /api/answer`` (``{"index", "label"}``), ``POST /api/undo``, ``POST /api/finish`` (stop now).
The state carries ``live``: the sibling-rate estimate from the answers so far, and whether its
interval is narrow enough to stop.
"""
from __future__ import annotations

import hmac
import io
import json
import logging
import re
import secrets
import socket
import sys
import threading
import webbrowser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Optional
from urllib.parse import parse_qs, urlsplit

from sibscan.errors import SibscanError
from sibscan.imageio import open_image

from .session import LabelSession

__all__ = ["LabelServer", "run_web"]

log = logging.getLogger("sibscan.calibration.web")

STATIC = Path(__file__).resolve().parent / "static"
_MAX_SIDE = 640
_CSP = ("default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src "
        "'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
_MAX_BODY = 4096
_TIMEOUT_S = 15  # a client that stops sending mid-request releases its thread after this
_PAIR = re.compile(r"^/api/pair/(\d{1,9})$")
_ITEM = re.compile(r"^/api/item/(\d{1,9})/(left|right)$")


def _png(path: str) -> bytes:
    im = open_image(path)
    im.thumbnail((_MAX_SIDE, _MAX_SIDE))
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    return buf.getvalue()


class _Handler(BaseHTTPRequestHandler):
    server: "_Server"
    protocol_version = "HTTP/1.1"
    timeout = _TIMEOUT_S

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
        self.send_header("X-Frame-Options", "DENY")
        self.send_header("Referrer-Policy", "no-referrer")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, obj: dict, code: int = 200) -> None:
        self._send(code, json.dumps(obj).encode("utf-8"), "application/json")

    def _error(self, code: int, message: str) -> None:
        self._json({"error": message}, code)

    def _authorised(self) -> bool:
        token = parse_qs(urlsplit(self.path).query).get("t", [""])[0]
        return hmac.compare_digest(token.encode(), self.server.token.encode())

    def _local_host(self) -> bool:
        """The Host header names this server (a page on another name, rebound to 127.0.0.1, is refused)."""
        return (self.headers.get("Host") or "").strip().lower() in self.server.hosts

    def _same_origin(self) -> bool:
        origin = self.headers.get("Origin")
        return origin is None or origin.strip().lower() in {f"http://{h}" for h in self.server.hosts}

    def _body(self):
        """The JSON object of the body, or None after answering an error: a Content-Length of 0..4096 bytes,
        all of it sent, holding a JSON object (JSON ``null``, a list or a number is refused with a 400: a
        request is always answered)."""
        raw = self.headers.get("Content-Length")
        try:
            length = int(raw) if raw is not None else 0
        except ValueError:
            length = -1
        if length < 0 or length > _MAX_BODY:
            self.close_connection = True  # never read (a prefix of) a body of a length we refuse
            self._error(413 if length > _MAX_BODY else 400, f"Content-Length must be 0 to {_MAX_BODY} bytes")
            return None
        data = self.rfile.read(length) if length else b""
        if len(data) != length:
            self.close_connection = True
            self._error(400, "the body is shorter than its Content-Length")
            return None
        try:
            body = json.loads(data) if data else {}
        except (ValueError, UnicodeDecodeError):
            self._error(400, "the body must be JSON")
            return None
        if not isinstance(body, dict):
            self._error(400, f"the body must be a JSON object, got {json.dumps(body)[:40]}")
            return None
        return body

    # --- verbs ---------------------------------------------------------------------------------
    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        if not self._local_host():
            return self._error(403, "forbidden: this page answers only as 127.0.0.1 or localhost")
        if not self._authorised():
            return self._error(403, "forbidden: open the URL printed by 'sibscan calibrate' (it carries the token)")
        route = urlsplit(self.path).path
        session = self.server.session
        try:
            if route in ("/", "/index.html"):
                return self._send(200, (STATIC / "label.html").read_bytes(), "text/html; charset=utf-8")
            if route == "/api/state":
                with self.server.lock:
                    return self._json({**session.state(), "live": session.live()})
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
        if not (self._local_host() and self._same_origin() and self._authorised()):
            self.close_connection = True
            return self._error(403, "forbidden")
        route = urlsplit(self.path).path
        session = self.server.session
        body = self._body()
        if body is None:
            return None
        with self.server.lock:
            try:
                if route == "/api/answer":
                    index = body.get("index")
                    if not isinstance(index, int) or isinstance(index, bool):  # JSON true is no pair number
                        return self._error(400, "answer needs {\"index\": int, \"label\": same|different|skip}")
                    res = session.answer(body["index"], str(body.get("label")), source="web")
                    state = session.state()
                    self._json({**res, "state": {**state, "live": session.live()}})
                    if state["next"] is None:
                        self.server.done.set()
                    return None
                if route == "/api/undo":
                    j = session.undo(source="web")
                    return self._json({"undone": j, "state": {**session.state(), "live": session.live()}})
                if route == "/api/finish":
                    self._json({"finished": True})
                    self.server.done.set()
                    return None
            except SibscanError as exc:
                return self._error(400, str(exc))
        return self._error(404, "not found")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver's default backlog of 5 reset a fifth of a burst of 200 connections
    request_queue_size = min(1024, socket.SOMAXCONN)

    def __init__(self, addr, session: LabelSession, token: str):
        super().__init__(addr, _Handler)
        self.session = session
        self.token = token
        port = self.server_address[1]
        self.hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
        self.lock = threading.Lock()
        self.done = threading.Event()

    def handle_error(self, request, client_address) -> None:
        """A client that went away is routine (debug log); anything else is one logged line, not a traceback."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError, socket.timeout)):
            log.debug("labelling page: client %s went away (%s)", client_address, exc)
            return
        log.error("labelling page: request from %s failed: %s: %s", client_address, type(exc).__name__, exc)
        log.debug("labelling page: request failure", exc_info=True)


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
        try:
            self.httpd = _Server(("127.0.0.1", int(port)), session, self.token)
        except OSError as exc:
            raise SibscanError(f"cannot serve the labelling page on 127.0.0.1:{port} ({exc.strerror or exc}); "
                               "pass another --port, or --port 0 for a free one") from None
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
        # stop() waits for serve_forever's next poll: at socketserver's default of 0.5 s, every close
        # of the page (each test of it too) idled up to half a second
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       name="sibscan-label", daemon=True)
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
    """Serve the page until every pair is answered; returns ``"done"``.

    Ctrl-C stops it (every answer given so far is saved) and is raised on, as in the terminal UI,
    so that the command ends with the interrupt's exit code (130), not as if labelling had finished.
    """
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
            echo("stopped; every answer so far is saved: re-run the same command to continue where you left off")
            raise
    return "done"

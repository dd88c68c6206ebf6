"""Issue 13, the labelling server: Host and Origin checked, no framing or referrer, bodies of a
stated and bounded length only, a burst of connections served, disconnects quiet, a busy port refused,
Ctrl-C ending with the interrupt's exit code."""
from __future__ import annotations

import http.client
import json
import socket
import threading

import pytest

from rel_helpers import assert_one_line_error, cli
from sibscan.calibration import LabelSession, LabelStore, calibrate
from sibscan.calibration.flow import _identity
from sibscan.calibration.sampling import Draw, Population
from planted_scan import planted_scan
from sibscan.calibration.web import LabelServer
from sibscan.errors import SibscanError
from sibscan.store.scandir import ScanDir


@pytest.fixture(scope="module")
def scan(tmp_path_factory):
    return planted_scan(tmp_path_factory.mktemp("label") / "scan", n_train=60, n_test=30, seed=2).path


@pytest.fixture
def server(scan, tmp_path):
    cal = tmp_path / "cal"
    calibrate(scan, calibration_dir=cal, ui="none", n_pairs=4)
    sd = ScanDir(scan)
    pop = Population.from_neighbours(sd.neighbours())
    store = LabelStore(cal / "labels.jsonl", _identity(sd.manifest()))
    session = LabelSession(pop, Draw.load(cal / "draw.json", pop), store, sd.items("test"), sd.items("train"))
    with LabelServer(session) as srv:
        yield srv


def _request(srv, method, path, body=None, headers=None):
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    conn.request(method, f"{path}?t={srv.token}", body=body, headers=headers or {})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp.status, dict(resp.getheaders()), data


def _answer(index=0):
    return json.dumps({"index": index, "label": "same"}).encode()


def _labels(srv):
    path = srv.httpd.session.store.path
    return path.read_text().count("\n") if path.exists() else 0


def test_host_header_must_name_this_server(server):
    assert _request(server, "GET", "/api/state")[0] == 200
    assert _request(server, "GET", "/api/state", headers={"Host": f"localhost:{server.port}"})[0] == 200
    assert _request(server, "GET", "/api/state", headers={"Host": f"attacker.example:{server.port}"})[0] == 403
    assert _request(server, "POST", "/api/answer", _answer(), {"Host": "attacker.example"})[0] == 403
    assert _labels(server) == 0


def test_post_origin_must_be_this_server(server):
    evil = {"Origin": "http://attacker.example", "Content-Type": "application/json"}
    assert _request(server, "POST", "/api/answer", _answer(), evil)[0] == 403
    assert _labels(server) == 0
    mine = {"Origin": f"http://127.0.0.1:{server.port}", "Content-Type": "application/json"}
    assert _request(server, "POST", "/api/answer", _answer(), mine)[0] == 200
    assert _labels(server) == 1


def test_page_cannot_be_framed_and_sends_no_referrer(server):
    status, headers, _ = _request(server, "GET", "/")
    assert status == 200
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["Referrer-Policy"] == "no-referrer"
    assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]


@pytest.mark.parametrize("length, code", [("-5", 400), ("5000", 413), ("abc", 400)])
def test_bad_content_length_is_refused_without_reading_a_prefix(server, length, code):
    body = _answer() + b" " * 5000  # a valid answer in the first bytes, then padding
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(f"POST /api/answer?t={server.token} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                  f"Content-Length: {length}\r\n\r\n".encode() + body)
        head = s.recv(4096).decode("latin1")
    assert head.startswith(f"HTTP/1.1 {code}"), head
    assert _labels(server) == 0


def test_short_body_is_refused(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(f"POST /api/answer?t={server.token} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                  f"Content-Length: 200\r\n\r\n".encode() + _answer())
        s.shutdown(socket.SHUT_WR)  # the client sends no more than this
        head = s.recv(4096).decode("latin1")
    assert head.startswith("HTTP/1.1 400"), head
    assert _labels(server) == 0


def test_a_burst_of_connections_is_served_and_disconnects_are_quiet(server, capfd):
    socks = [socket.create_connection(("127.0.0.1", server.port), timeout=20) for _ in range(200)]
    for s in socks[:20]:  # some clients go away mid-request
        s.sendall(b"GET /api/state?t=")
        s.close()
    answered = []

    def ask(s):
        try:
            s.sendall(f"GET /api/state?t={server.token} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                      "Connection: close\r\n\r\n".encode())
            answered.append(s.recv(64).startswith(b"HTTP/1.1 200"))
        except OSError:
            answered.append(False)
        finally:
            s.close()

    threads = [threading.Thread(target=ask, args=(s,)) for s in socks[20:]]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert answered.count(True) == 180
    assert "Traceback" not in capfd.readouterr().err


def test_busy_port_is_refused_in_one_line(server, scan):
    with pytest.raises(SibscanError, match=r"cannot serve the labelling page on 127\.0\.0\.1:\d+ .*another --port"):
        LabelServer(server.httpd.session, port=server.port)
    result = cli("calibrate", scan, "--out", scan.parent / "cal2", "--no-browser", "--port", str(server.port),
                 "--n-pairs", "3")
    assert_one_line_error(result, "cannot serve the labelling page", "--port 0")
    assert_one_line_error(cli("calibrate", scan, "--port", "70000"), "--port", "0..65535")


def test_ctrl_c_in_the_web_ui_exits_130_like_the_terminal_ui(scan, monkeypatch):
    class Interrupted:
        def wait(self, timeout=None):
            raise KeyboardInterrupt  # the person presses Ctrl-C while the page is open

    monkeypatch.setattr(LabelServer, "done", property(lambda self: Interrupted()))
    result = cli("calibrate", scan, "--out", scan.parent / "cal3", "--no-browser", "--n-pairs", "3")
    assert result.exit_code == 130, result.output
    assert "re-run the same command" in result.output


@pytest.mark.parametrize("body", [b"null", b"[1, 2]", b"3", b'"same"'])
@pytest.mark.parametrize("route", ["/api/answer", "/api/undo", "/api/finish"])
def test_a_body_that_is_not_a_json_object_is_answered_400(server, route, body):
    """Issue 32, item 12: JSON null (or any non-object) was taken for 'an error was sent': no reply, and
    the connection hung until the server's time-out."""
    status, _, data = _request(server, "POST", route, body, {"Content-Type": "application/json"})
    assert status == 400, data
    assert "must be a JSON object" in json.loads(data)["error"]
    assert _labels(server) == 0
    assert not server.done.is_set()


@pytest.mark.parametrize("index", ["true", "false", '"1"', "1.0", "null"])
def test_an_answer_whose_index_is_not_a_whole_number_is_answered_400_and_not_recorded(server, index):
    """JSON true was taken as pair 1 (a bool is an int in Python) and its label recorded."""
    body = ('{"index": %s, "label": "same"}' % index).encode()
    status, _, data = _request(server, "POST", "/api/answer", body, {"Content-Type": "application/json"})
    assert status == 400, data
    assert "answer needs" in json.loads(data)["error"]
    assert _labels(server) == 0

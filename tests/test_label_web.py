"""The labelling page in a real browser (Debian chromium driven by Playwright), and its server's guards."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from _helpers import label_session, read_labels

from sibscan.calibration import calibrate
from planted_scan import planted_scan
from sibscan.calibration.web import LabelServer

pytestmark = pytest.mark.browser

def _session(tmp_path, modality, n_pairs, **kw):
    p = planted_scan(tmp_path / "scan", n_train=120, n_test=60, seed=11, modality=modality, **kw)
    cal_dir = tmp_path / "cal"
    calibrate(p.path, calibration_dir=cal_dir, ui="none", n_pairs=n_pairs)
    return label_session(p.path, cal_dir), cal_dir


def _get(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_token_required_and_no_traversal(tmp_path):
    session, _ = _session(tmp_path, "text", 3)
    with LabelServer(session) as server:
        base, tok = f"http://127.0.0.1:{server.port}", server.token
        assert _get(f"{base}/")[0] == 403
        assert _get(f"{base}/api/state?t=wrong")[0] == 403
        assert _get(f"{base}/api/pair/0")[0] == 403
        code, body = _get(f"{base}/api/state?t={tok}")
        assert code == 200 and json.loads(body)["total"] == 3
        for path in ("/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/api/item/0/../../../etc/passwd",
                     "/static/../web.py", "/api/pair/999", "/api/item/0/left", "/api/item/0/top"):
            code, body = _get(f"{base}{path}?t={tok}")
            assert code == 404, path
            assert b"root:" not in body and b"import" not in body
        req = urllib.request.Request(f"{base}/api/answer", data=b'{"index": 0, "label": "same"}', method="POST")
        assert _get(req)[0] == 403
        assert not (session.store.path.exists())


def test_label_by_keyboard_and_click_with_reload(tmp_path, browser):
    from playwright.sync_api import expect

    session, cal_dir = _session(tmp_path, "text", 6)
    with LabelServer(session) as server:
        page = browser.new_page()
        page.goto(server.url)
        progress = page.locator("#progress")
        expect(progress).to_have_text("0 / 6 labelled")
        expect(page.locator("#left .text")).not_to_be_empty()
        assert "score" not in page.locator("body").inner_text()  # hidden until answered
        page.keyboard.press("y")
        expect(progress).to_have_text("1 / 6 labelled")
        expect(page.locator("#last")).to_contain_text("same — score 0.")
        page.click("#different")
        expect(progress).to_have_text("2 / 6 labelled")
        page.keyboard.press("u")
        expect(progress).to_have_text("1 / 6 labelled")
        expect(page.locator("#last")).to_have_text("undid pair #1")
        page.reload()
        expect(progress).to_have_text("1 / 6 labelled")
        page.keyboard.press("n")
        expect(progress).to_have_text("2 / 6 labelled")
        page.click("#skip")
        expect(progress).to_have_text("3 / 6 labelled")
        page.click("#same")
        expect(progress).to_have_text("4 / 6 labelled")
        page.keyboard.press("s")
        expect(progress).to_have_text("5 / 6 labelled")
        page.keyboard.press("n")
        expect(page.locator("#done")).to_be_visible()
        expect(progress).to_have_text("6 / 6 labelled")
        assert server.done.wait(5)
        page.close()
    recs = read_labels(cal_dir)
    assert [r["label"] for r in recs] == ["same", "different", "undo", "different", "skip", "same", "skip", "different"]
    assert [r["query_id"] for r in recs[:3]] == [session.keys[0][1], session.keys[1][1], session.keys[1][1]]
    assert {r["source"] for r in recs} == {"web"}
    assert session.answers() == {0: "same", 1: "different", 2: "skip", 3: "same", 4: "skip", 5: "different"}


def test_images_scaled_and_series_plotted(tmp_path, browser):
    from playwright.sync_api import expect

    session, _ = _session(tmp_path, "image", 2, dim=48)
    with LabelServer(session) as server:
        code, body = _get(f"http://127.0.0.1:{server.port}/api/item/0/right?t={server.token}")
        assert code == 200 and body[:8] == b"\x89PNG\r\n\x1a\n"
        page = browser.new_page()
        page.goto(server.url)
        img = page.locator("#left img")
        expect(img).to_have_count(1)
        # the page's CSP forbids eval, so poll from here rather than with wait_for_function
        for _ in range(50):
            widths = [page.locator(f"#{side} img").evaluate("el => el.complete ? el.naturalWidth : -1")
                      for side in ("left", "right")]
            if min(widths) >= 0:
                break
            page.wait_for_timeout(100)
        assert widths == [64, 64]
        page.close()
    (tmp_path / "t").mkdir()
    session, _ = _session(tmp_path / "t", "table", 2, dim=16)
    with LabelServer(session) as server:
        page = browser.new_page()
        page.goto(server.url)
        expect(page.locator("#left svg polyline")).to_have_count(2)
        assert len(page.locator("#left svg polyline").nth(1).get_attribute("points").split()) == 16
        page.close()


def test_a_control_pair_is_answered_on_the_page_like_any_other(tmp_path, browser):
    """A control whose copy has no score: the page says the answer without one (it read null's toFixed and
    showed an error), and the answer goes to controls.jsonl, not labels.jsonl."""
    from playwright.sync_api import expect

    p = planted_scan(tmp_path / "scan", n_train=120, n_test=60, seed=11, modality="text")
    cal_dir = tmp_path / "cal"
    calibrate(p.path, calibration_dir=cal_dir, ui="none", n_pairs=6, controls=0)
    session = label_session(p.path, cal_dir, controls=0.5)
    first = next(i for i, (kind, c) in enumerate(session.seq) if kind == "control" and c.score is None)
    with LabelServer(session) as server:
        page = browser.new_page()
        page.goto(server.url)
        for k in range(first + 1):
            expect(page.locator("#progress")).to_have_text(f"{k} / {session.state()['total']} labelled")
            expect(page.locator("#left .text")).not_to_be_empty()
            page.keyboard.press("y")
            expect(page.locator("#progress")).to_have_text(f"{k + 1} / {session.state()['total']} labelled")
        expect(page.locator("#last")).to_have_text(f"pair #{first}: same")
        expect(page.locator("#message")).to_have_text("")
        page.close()
    assert len(read_labels(cal_dir) if (cal_dir / "labels.jsonl").exists() else []) == sum(1 for kind, _ in session.seq[:first + 1] if kind == "pair")
    assert (cal_dir / "controls.jsonl").read_text().count("\n") == sum(1 for kind, _ in session.seq[:first + 1] if kind == "control")

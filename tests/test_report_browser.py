"""Open the HTML report in headless Chromium: it renders its plots and fetches nothing."""
from __future__ import annotations

import numpy as np
import pytest
from planted_scan import make_scan

from sibscan.report import write_reports

@pytest.mark.browser
def test_html_report_renders_offline(tmp_path, browser):
    make_scan(tmp_path, modality="text")
    page_path = write_reports(tmp_path, formats=["html"], correct=np.arange(30) % 4 != 0)["html"]
    requests = []
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    try:
        page.on("request", lambda r: requests.append(r.url))
        page.goto(page_path.as_uri())
        page.wait_for_load_state("load")
        assert page.locator("svg.histogram rect").count() > 5
        assert page.locator("svg.sweep polyline.rate").count() == 1
        assert page.locator("svg.sweep polyline.gap").count() == 1
        box = page.locator("svg.histogram").bounding_box()
        assert box["width"] > 400 and box["height"] > 150
        assert page.locator("mark").count() > 0
        assert "flagged at verified similarity ≥ 0.9000" in page.locator(".headline").inner_text()
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    finally:
        page.close()
    assert (tmp_path / "report.png").stat().st_size > 10_000
    assert [u for u in requests if not u.startswith(("file://", "data:"))] == []

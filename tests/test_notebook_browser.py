"""A notebook's view of a Scan (Scan._repr_html_) in headless Chromium: the headline, the gallery with
small images scaled up, and plots whose labels stay inside the drawing and whose width follows the page."""
from __future__ import annotations

import numpy as np
import pytest
from planted_scan import planted_images

import sibscan

# every <text> of every plot lies inside its <svg>: labels never clip
INSIDE = """() => Array.from(document.querySelectorAll('svg.plot')).map(svg => {
  const box = svg.getBoundingClientRect();
  return Array.from(svg.querySelectorAll('text')).filter(t => {
    const b = t.getBoundingClientRect();
    return b.left < box.left - 0.5 || b.right > box.right + 0.5 || b.top < box.top - 0.5 || b.bottom > box.bottom + 0.5;
  }).map(t => t.textContent);
}).flat()"""


@pytest.mark.browser
def test_scan_in_a_notebook_cell_and_its_report_plots(tmp_path, browser):
    Image = pytest.importorskip("PIL.Image")
    train, test = planted_images(np.random.default_rng(5))
    scan = sibscan.scan([Image.fromarray(a) for a in train], [Image.fromarray(a) for a in test], encoder="pixels",
                        verify=False, cutoff=0.95, out=tmp_path / "scan", baseline_pairs=400, progress=False)
    cell = scan._repr_html_()
    report_html = scan.write_reports(["html"])["html"]
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    try:
        # a notebook output cell: the fragment inside someone else's page
        page.set_content(f"<html><body><div class='output_area'>{cell}</div></body></html>")
        assert "flagged at similarity ≥ 0.9500" in page.locator(".sibscan-headline").inner_text()
        thumbs = page.locator(".sibscan-gallery img.thumb")
        assert thumbs.count() >= 8  # both sides of the closest pairs
        widths = thumbs.evaluate_all("els => els.map(e => e.naturalWidth)")
        assert min(widths) >= 144  # 24-px images scaled up six times, nearest neighbour
        assert page.locator("svg.histogram rect title").count() > 5  # hover values
        assert page.evaluate(INSIDE) == []
        page.goto(report_html.as_uri())
        assert page.locator("svg.plot").count() == 2 and page.evaluate(INSIDE) == []
        wide = page.locator("svg.histogram").bounding_box()["width"]
        page.set_viewport_size({"width": 600, "height": 900})
        narrow = page.locator("svg.histogram").bounding_box()["width"]
        assert narrow < wide and narrow > 500  # the plot follows the page
        assert page.evaluate(INSIDE) == []
    finally:
        page.close()

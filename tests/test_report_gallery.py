"""The report's galleries as a person looks at them: each pair once, near pairs first, exact twins last as a
count and a list, similarities printed with the digits that matter (float noise above 1 is 1)."""
from __future__ import annotations

import re

import pytest
from planted_scan import make_scan

from sibscan import fmt
from sibscan.items import Items
from sibscan.report import build_report, render_html, write_reports
from sibscan.store.scandir import ScanDir
from sibscan.store.neighbourtable import Neighbours

#: one gallery card: the test id, then the train id of its pair
_CARD = re.compile(r'class="meta">test ([^ <]+).*?class="meta">train ([^ <]+)', re.S)


def _cards(page: str) -> list:
    return _CARD.findall(page)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    d = tmp_path_factory.mktemp("scan")
    make_scan(d)  # te0-te3 exact twins, te4-te8 near siblings 0.91..0.99, cutoff 0.9
    sd = ScanDir(d)
    return d, sd.items("test"), sd.items("train")


def test_no_pair_appears_in_two_galleries(planted):
    d, test, train = planted
    page = render_html(build_report(d), test, train)
    cards = _cards(page)
    assert len(cards) >= 20 and len(cards) == len(set(cards)), [c for c in cards if cards.count(c) > 1]
    # the near siblings te4-te8 are among the closest pairs and just above the cutoff: shown once each
    assert sorted(t for t, _ in cards if t in {"te4", "te5", "te6", "te7", "te8"}) == ["te4", "te5", "te6", "te7", "te8"]


def test_exact_twins_come_after_the_near_pairs(planted):
    d, test, train = planted
    rep = build_report(d, n_pairs=30)  # room for every test item: the 4 exact twins come last
    assert [p["exact"] for p in rep["closest_pairs"]] == [False] * 26 + [True] * 4
    # just above the cutoff: the pairs it decides (te4-te8 among them), not the exact twins te0-te3 (score 1),
    # siblings at every cutoff
    above = {p["test_id"] for p in rep["near_cutoff"]["above"]}
    assert above >= {"te4", "te5", "te6", "te7", "te8"} and not above & {"te0", "te1", "te2", "te3"}
    page = render_html(rep, test, train)
    cards = _cards(page)
    # no exact twin as a card: they are counted and listed by id under the last gallery
    assert not {t for t, _ in cards} & {"te0", "te1", "te2", "te3"} and "exact twin ·" not in page
    twins = page.index("<h2>Exact twins</h2>")
    assert twins > max(page.index(f'class="meta">test {t} ') for t, _ in cards)
    listed = page[twins:page.index("<h2>", twins + 1)]
    assert "4 test items have a byte-for-byte copy in train" in listed
    assert all(f"test te{i} = train tr{i}" in listed for i in range(4))


def test_pair_cards_sit_in_a_grid(planted):
    d, test, train = planted
    page = render_html(build_report(d), test, train)
    assert page.count('<div class="gallery"') == 3 and "display:grid" in page


def test_a_similarity_of_float_noise_above_one_prints_as_one(tmp_path):
    assert fmt.score(1.0000001192092896) == "1.0000" and fmt.score(-1.0000001192092896) == "-1.0000"
    assert fmt.scores([0.9999, 1.0000001192092896, 1.0]) == ["0.9999", "1.0000", "1.0000"]
    assert fmt.score(1.01) == "1.0100"  # not noise: printed as it is, an error is not hidden
    sd = ScanDir(tmp_path)
    sd.write_items(Items("train", "text", ["a", "b"], texts=["one two three four", "five six seven"]))
    sd.write_items(Items("test", "text", ["x", "y"], texts=["one two three four", "eight nine"]))
    noise = 1.0000001192092896  # a float32 cosine of two unit vectors, one ulp past 1
    sd.write_neighbours(Neighbours({
        "query_split": ["test", "test"], "query_id": ["x", "y"], "query_index": [0, 1], "rank": [0, 0],
        "neighbour_split": ["train", "train"], "neighbour_id": ["a", "b"], "neighbour_index": [0, 1],
        "similarity": [noise, 0.3], "exact": [False, False]}))
    sd.write_manifest({"status": "complete",
                       "cutoff": {"value": 0.9, "source": "uncalibrated", "interval": [0.9, noise]}})
    written = write_reports(sd.path, formats=["html", "md", "json"])
    page, md = written["html"].read_text(), written["md"].read_text()
    page = page[:page.index("<h2>Manifest</h2>")]  # the manifest is shown as its JSON, full values
    assert "score 1.0000<" in page and "1.0000001" not in page and "1.00000012" not in page
    assert "interval 0.9000 to 1.0000 " in md and "1.0000001" not in md and "1.00000012" not in md
    assert "1.0000001192092896" in written["json"].read_text()  # JSON keeps the value as stored

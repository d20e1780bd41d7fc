"""hlc report: the page and its images from a real (quick) build, and the page in a headless browser."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest

import hlc
from hlc.reports import Report, write_report

ROOT = Path(__file__).resolve().parents[2]
DESCRIPTIONS = ROOT / "tests" / "descriptions"
ARTIFACTS = ROOT / "build" / "test-artifacts"
PNG = b"\x89PNG\r\n\x1a\n"


def fake_evaluation() -> dict:
    """What `hlc evaluate` wrote in format 1, for a few points of the decisions library: one wrong."""
    points = []
    for index, (n, width, right) in enumerate([(32, 4, True), (300, 20, True), (5000, 9, False), (60000, 24, True)]):
        chosen = "plain" if right else "tiles tall=1 wide=1"
        points.append({
            "P": 1, "index": index, "point": {"i": 4, "w": width},
            "variables": {"n": n, "width": width, "P": 1, "logP": 0.0},
            "chosen": {"implementation": chosen.split()[0], "parameters": {}},
            "candidates": [{"label": "plain", "implementation": "plain", "parameters": {}, "seconds": 1e-5},
                           {"label": "tiles tall=1 wide=1", "implementation": "tiles",
                            "parameters": {"tall": 1, "wide": 1}, "seconds": 2e-5}],
            "chosen_label": chosen, "best_label": "plain", "penalty": 0.0 if right else 1.0, "right": right,
            "dispatched": {"label": "(dispatched)", "implementation": "(dispatched)", "parameters": {},
                           "seconds": 1.1e-5}})
        if not right:  # timed on a second input too, where tiles wins: the choice turns on the input
            points[-1]["other_input"] = [
                {"label": "plain", "implementation": "plain", "parameters": {}, "seconds": 2e-5},
                {"label": "tiles tall=1 wide=1", "implementation": "tiles", "parameters": {"tall": 1, "wide": 1},
                 "seconds": 1e-5}]
    return {"format": 1, "library": "decisions", "created": "2026-11-22T00:00:00+0000", "seed": 1, "points": 4,
            "params": "chosen", "tolerance": 0.03, "baseline": None, "ranks": [1],
            "interfaces": {"work": {"summary": {
                "points": 4, "tolerance": 0.03, "right_share": 0.75, "mean_penalty_when_wrong": 1.0,
                "expected_penalty": 0.25, "worst_penalty": 1.0, "ratio_median": 1.0, "ratio_p95": 1.85,
                "ratio_max": 2.0, "chosen_plain": 3, "chosen_tiles": 1}, "by_ranks": {}, "points": points}}}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    """comm (a used library with one variable), then decisions (two variables,
    parameterized implementations) with a fake evaluation beside its models."""
    folder = tmp_path_factory.mktemp("build")
    hlc.build(DESCRIPTIONS / "comm.hl", out=folder / "comm", quick=True)
    hlc.build(DESCRIPTIONS / "decisions.hl", out=folder / "decisions", quick=True)
    (folder / "decisions" / "evaluation.json").write_text(json.dumps(fake_evaluation()), encoding="utf-8")
    return folder / "comm", folder / "decisions"


@pytest.fixture(scope="module")
def report(built, tmp_path_factory) -> Report:
    return write_report(built[1], out=tmp_path_factory.mktemp("report"))


class _Balance(HTMLParser):
    """Every element closed, in order (void elements aside): the page's structure is sound."""

    VOID = {"meta", "link", "img", "br", "hr", "input", "source", "col", "area", "base", "wbr"}

    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.open[-1:] or 'nothing'} at {self.getpos()}")
        else:
            self.open.pop()


def image_sources(page: str) -> list[str]:
    return re.findall(r'<img src="([^"]+)"', page)


def test_the_page_and_every_image_it_shows(report):
    page = report.index.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page
    links = re.findall(r'(?:src|href)="([^"]*)"', page)
    assert links and not [link for link in links if ":" in link and not link.startswith("data:")], links  # offline
    sources = image_sources(page)
    assert len(sources) >= 8  # a region map, five fit plots, parameter plots of digits, blocks and tiles
    for source in sources:
        path = report.index.parent / source
        assert path.is_file() and path.stat().st_size > 1000, source
        assert path.read_bytes()[:8] == PNG, source
    assert {p.name for p in report.images} == set(sources)
    checker = _Balance()
    checker.feed(page)
    assert not checker.errors and checker.open == [], (checker.errors, checker.open)
    for expected in ("Library decisions", "Interface work", "digits", "bpd", "R²", "verification MRE",
                     "def time_plain", "work-map-n-width-P1.png", "work-digits-bpd.png", "work-tiles-wide.png"):
        assert expected in page, expected


def test_the_evaluation_is_summarized_and_its_wrong_choice_listed(report):
    page = report.index.read_text(encoding="utf-8")
    assert not any("evaluation" in note for note in report.notes), report.notes
    assert "<td>right choices</td><td>75.0%</td>" in page and "right_share" not in page
    assert "mean when wrong 100.0%, expected 25.00%, worst 100.0%" in page and "plain 3, tiles 1" in page
    assert "1 wrong choice " in page and "tiles tall=1 wide=1" in page
    assert "<th>turns on the input</th>" in page and "<td>yes</td>" in page
    assert not any("could not be drawn" in note for note in report.notes), report.notes


def test_the_maps_tell_the_wrong_choices_that_turn_on_the_input(built):
    from hlc.artefacts.evaluation import EvaluationDocument
    from hlc.reports.analysis import overlay

    document = EvaluationDocument.from_json(fake_evaluation())
    drawn = overlay(document, "work", "n", "width", 1)
    assert drawn.right.tolist() == [True, True, False, True]
    assert drawn.turns.tolist() == [False, False, True, False]


def test_without_an_evaluation_a_note_and_still_a_report(built, tmp_path):
    result = write_report(built[0], out=tmp_path / "comm")
    assert any("no evaluation.json" in note for note in result.notes)
    page = result.index.read_text(encoding="utf-8")
    assert "no evaluation.json" in page
    assert "transfer-strip-bytes-P1.png" in page  # one variable: a strip instead of a map
    assert all((tmp_path / "comm" / source).stat().st_size > 0 for source in image_sources(page))


def test_maps_and_fixed_values_can_be_chosen(built, tmp_path):
    result = write_report(built[1], out=tmp_path / "maps", maps=[("width", "n"), ("n", "nothing")],
                          fixed={"elsewhere": 3})
    names = {p.name for p in result.images}
    assert "work-map-width-n-P1.png" in names and "work-map-n-width-P1.png" not in names
    assert any("n,nothing" in note for note in result.notes)
    assert any("elsewhere" in note for note in result.notes)


def test_a_folder_without_models_is_refused(tmp_path):
    with pytest.raises(FileNotFoundError, match="no models.json"):
        write_report(tmp_path)


def test_a_build_with_nothing_but_models_still_gets_a_page(tmp_path):
    """No samples, no description, no module: the tables, and notes for the rest."""
    models = {"format": 1, "library": "ghost", "description": str(tmp_path / "gone.hl"), "created": "today",
              "fingerprint": {"cpu": "a CPU", "cores": 1, "platform": "native", "quick": True},
              "implementations": {"a": {"interface": "run", "time": {"status": "excluded", "cause": "crashed"}},
                                  "b": {"interface": "run", "time": {"status": "fitted", "terms": ["1"],
                                                                     "kept": ["1"], "coefficients": {"1": 1e-6},
                                                                     "half_widths": {"1": 1e-8}, "dropped": []}}}}
    (tmp_path / "models.json").write_text(json.dumps(models), encoding="utf-8")
    result = write_report(tmp_path)
    assert result.index == tmp_path / "report" / "index.html" and result.images == []
    page = result.index.read_text(encoding="utf-8")
    assert "crashed" in page and "Library ghost" in page
    assert any("gone.hl was not found" in note for note in result.notes)
    assert any("could not be imported" in note for note in result.notes)
    assert any("excluded: crashed" in note for note in result.notes)


def _chrome(scratch: Path):
    """Headless Chromium through the system chromedriver, or a skip saying what is missing.

    The browser's profile and sockets go under `scratch`, so a run leaves
    nothing in the system's temporary folder."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if chromium is None or driver is None:
        missing = " and ".join(n for n, p in (("chromium", chromium), ("chromedriver", driver)) if p is None)
        pytest.skip(f"chromium/chromedriver not installed: {missing} not found (run scripts/install-browser.sh)")
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1400,1000", f"--user-data-dir={scratch / 'profile'}"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=driver, env={**os.environ, "TMPDIR": str(scratch)})
    return webdriver.Chrome(service=service, options=options)


def test_the_page_in_a_headless_browser(report, tmp_path):
    driver = _chrome(tmp_path)
    try:
        driver.get(report.index.resolve().as_uri())
        images = driver.execute_script(
            "return Array.from(document.images).map(i => [i.getAttribute('src'), i.complete && i.naturalWidth > 0])")
        assert images and all(loaded for _, loaded in images), images
        severe = [entry for entry in driver.get_log("browser") if entry.get("level") == "SEVERE"]
        assert not severe, severe
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(1400, min(height + 200, 16000))  # the whole page in one screenshot
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        assert driver.save_screenshot(str(ARTIFACTS / "report.png"))
    finally:
        driver.quit()
    assert (ARTIFACTS / "report.png").read_bytes()[:8] == PNG


def test_a_map_names_only_the_implementations_that_apply_at_its_ranks(built):
    """`blocks` requires P == 1: it is in the legend at one rank, not at two."""
    from hlc.reports import analysis
    from hlc.reports.data import read_build

    data = read_build(built[1])
    info = next(i for i in data.interfaces if i.name == "work")
    one = analysis.region_map(data.module, info, "n", "width", {}, 1, cells=(12, 8))
    two = analysis.region_map(data.module, info, "n", "width", {}, 2, cells=(12, 8))
    assert "blocks" in one.shares and "blocks" not in two.shares
    assert "plain" in one.shares and "plain" in two.shares
    assert sum(two.shares.values()) == pytest.approx(1.0)


def test_the_plots_against_a_parameter_are_drawn_where_the_variables_occur_together(built):
    """Each curve against a parameter is at the variables of one of the
    implementation's samples (n and width as profiled together), along n
    from its low end to its high end; what all three share is held."""
    from hlc.reports import analysis
    from hlc.reports.data import read_build

    data = read_build(built[1])
    info = next(i for i in data.interfaces if i.name == "work")
    tiles = next(i for i in info.implementations if i.name == "tiles")
    profiled = {(s.variables["n"], s.variables["width"]) for s in info.samples if s.implementation == "tiles"}
    found = analysis.sweeps(data.module, info, tiles, data.constants, analysis.fixed_values(info, {}))
    assert [sweep.parameter for sweep in found] == ["tall", "wide"]
    for sweep in found:
        assert len(sweep.curves) >= 2
        at = [dict(re.findall(r"(\w+)=([\d.e+]+)", curve.label)) | {k: str(v) for k, v in sweep.held.items()}
              for curve in sweep.curves]
        assert all((float(point["n"]), float(point["width"])) in profiled for point in at), (at, profiled)
        sizes = [float(point["n"]) for point in at]
        assert sizes == sorted(sizes) and sizes[0] < sizes[-1]


def test_the_dispatcher_s_value_of_a_long_range_lies_on_its_curve(built, monkeypatch):
    """A long range is drawn at a few hundred values spread geometrically,
    which need not hold the value the dispatcher sets at a point: that value
    is drawn too, where the star marks it, with the model's prediction.
    (Here the values spread hold none of the range's: one beyond its end.)"""
    from hlc.reports import analysis
    from hlc.reports.data import read_build

    def beyond(parameter, environment):
        return np.array([analysis._bounds(parameter, environment)[1] + 1])

    monkeypatch.setattr(analysis, "_parameter_values", beyond)
    data = read_build(built[1])
    info = next(i for i in data.interfaces if i.name == "work")
    chunks = next(i for i in info.implementations if i.name == "chunks")
    [sweep] = analysis.sweeps(data.module, info, chunks, data.constants, analysis.fixed_values(info, {}))
    assert list(sweep.values) == sorted(set(sweep.values))
    chosen = [curve for curve in sweep.curves if curve.chosen is not None]
    assert chosen
    for curve in chosen:
        at = list(sweep.values).index(curve.chosen)
        assert math.isfinite(curve.predicted[at]) and curve.predicted[at] > 0
        assert math.isnan(curve.predicted[-1])  # beyond the range: no prediction drawn


def test_a_map_leaves_blank_where_no_input_was_profiled(built):
    """n and width vary independently in the decisions library's samples: the
    whole map can be input.  Where width followed n (its samples made so),
    only a band along that curve can, the rest is blank, and the shares
    count only the band."""
    from dataclasses import replace

    from hlc.reports import analysis
    from hlc.reports.data import read_build

    data = read_build(built[1])
    info = next(i for i in data.interfaces if i.name == "work")
    free = analysis.region_map(data.module, info, "n", "width", {}, 1, cells=(24, 16))
    assert free.profiled is None

    low, high = info.domain["width"]
    following = [replace(s, variables={**s.variables, "width": float(
        round(low + (high - low) * (math.log(s.variables["n"]) - math.log(info.domain["n"][0]))
              / (math.log(info.domain["n"][1]) - math.log(info.domain["n"][0]))))})
        for s in info.samples]
    band = analysis.region_map(data.module, replace(info, samples=following), "n", "width", {}, 1, cells=(24, 16))
    assert band.profiled is not None and 0.03 < band.profiled.mean() < 0.4
    assert band.profiled.any(axis=0).all()  # every column has its part of the curve
    assert not band.profiled[-1, 0] and not band.profiled[0, -1]  # the corners off the curve are blank
    assert sum(share for name, share in band.shares.items()) == pytest.approx(1.0)

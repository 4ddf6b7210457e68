"""report.html in headless Chromium: every figure decodes and shows with its caption, every
table renders, and the summary (verdict, segments, check lights) is the first screen.

The demo session is run as in test_run.py; a copy of its report.html gets a small probe
script appended that, after the page's load event, writes what the browser actually laid
out (each <img>'s natural and rendered size and the share of non-white pixels it decodes
to; each <table>'s rows, columns and rendered size) into a <pre>, read back with
``chromium --dump-dom``. A screenshot of the first screenful must not be blank.

Needs Debian's ``chromium`` package (CI: ``apt-get install -y chromium``); skipped with a
reason when no Chromium binary is found (``RIGTOOL_CHROMIUM`` may name one).
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from rigtool.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _chromium() -> str | None:
    env = os.environ.get("RIGTOOL_CHROMIUM")
    if env:
        return env
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


CHROMIUM = _chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium binary (Debian: apt-get install -y chromium)")

_PROBE = """<script>
window.addEventListener('load', function () {
  function inked(im) {
    try {
      var c = document.createElement('canvas');
      c.width = im.naturalWidth; c.height = im.naturalHeight;
      var g = c.getContext('2d'); g.drawImage(im, 0, 0);
      var d = g.getImageData(0, 0, c.width, c.height).data, n = 0;
      for (var k = 0; k < d.length; k += 4) {
        if (d[k + 3] > 0 && (d[k] < 200 || d[k + 1] < 200 || d[k + 2] < 200)) n++;
      }
      return n / (c.width * c.height);
    } catch (e) { return -1; }
  }
  var imgs = Array.prototype.map.call(document.images, function (im) {
    var r = im.getBoundingClientRect();
    return {alt: im.alt, complete: im.complete, w: im.naturalWidth, h: im.naturalHeight,
            rw: r.width, rh: r.height, ink: inked(im)};
  });
  var tables = Array.prototype.map.call(document.querySelectorAll('table'), function (t) {
    var r = t.getBoundingClientRect();
    var cells = Array.prototype.map.call(t.rows, function (row) {
      return Array.prototype.map.call(row.cells, function (c) { return c.innerText; });
    });
    return {cells: cells, w: r.width, h: r.height};
  });
  function box(el) {
    if (!el) { return null; }
    var r = el.getBoundingClientRect();
    return {top: r.top, bottom: r.bottom, w: r.width, h: r.height};
  }
  var figures = Array.prototype.map.call(document.querySelectorAll('figure'), function (f) {
    var cap = f.querySelector('figcaption');
    var code = cap ? cap.querySelector('code') : null;
    return {box: box(f), img: box(f.querySelector('img')),
            caption: cap ? cap.innerText : '', visible: f.checkVisibility(),
            file_lines: code ? code.getClientRects().length : 0};
  });
  var wide = Array.prototype.map.call(document.querySelectorAll('table'), function (t) {
    var r = t.getBoundingClientRect(), p = t.parentElement.getBoundingClientRect();
    return {right: r.right, box_right: p.right, scrolls: t.parentElement.scrollWidth >
            t.parentElement.clientWidth + 1};
  });
  var first = document.querySelector('main').firstElementChild;
  var layout = {viewport: {w: window.innerWidth, h: window.innerHeight},
                summary: box(document.getElementById('summary')),
                verdict: box(document.querySelector('#summary p.verdict')),
                checks: box(document.querySelector('#summary table.checks')),
                segments: box(document.querySelector('#summary table')),
                toc: Array.prototype.map.call(document.querySelectorAll('nav#toc a'),
                                              function (a) { return a.getAttribute('href'); }),
                sections: Array.prototype.map.call(document.querySelectorAll('main > section'),
                                                   function (x) { return x.id; }),
                first_block: first ? first.tagName : '',
                figures: figures, wide: wide,
                scroll_w: document.documentElement.scrollWidth,
                main_right: document.querySelector('main').getBoundingClientRect().right};
  var pre = document.createElement('pre');
  pre.id = 'rigtool-render-probe';
  pre.textContent = JSON.stringify({images: imgs, tables: tables, layout: layout});
  document.body.appendChild(pre);
});
</script>"""


#: the first screen the summary must fill: a laptop browser window, CSS pixels
SCREEN = (1280, 900)


def _chromium_args(user_dir: Path) -> list[str]:
    # --no-sandbox: CI containers run as root; the page is a local file we wrote.
    return [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--hide-scrollbars", f"--user-data-dir={user_dir}", "--virtual-time-budget=10000"]


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


@pytest.fixture(scope="module")
def report(demo_run):
    return demo_run


@pytest.fixture(scope="module")
def rendered(report):
    tmp, out = report
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "</body>" in html
    probe = tmp / "probe.html"
    probe.write_text(html.replace("</body>", _PROBE + "</body>"), encoding="utf-8")
    run = subprocess.run(_chromium_args(tmp / "chrome-dom")
                         + [f"--window-size={SCREEN[0]},{SCREEN[1]}", "--dump-dom",
                            probe.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    m = re.search(r'<pre id="rigtool-render-probe">(.*?)</pre>', run.stdout, re.S)
    assert m, "the probe script did not run (page not loaded?)\n" + run.stderr[-2000:]
    text = m.group(1).replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"')
    return json.loads(text.replace("&amp;", "&")), html


def test_every_figure_decodes_and_shows(report, rendered):
    _, out = report
    probe, html = rendered
    figures = sorted(p.name for p in out.glob("*.png"))
    assert figures, "the run wrote no figures"
    images = {im["alt"]: im for im in probe["images"]}
    assert sorted(images) == figures                 # every PNG figure is in the page
    # The PNGs embedded in the HTML are the figures written next to it.
    embedded = re.findall(r'alt="([^"]+)" src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    for alt, b64 in embedded:
        assert base64.b64decode(b64) == (out / alt).read_bytes(), alt
    for name in figures:
        im = images[name]
        w, h = _png_size((out / name).read_bytes())
        assert im["complete"] and (im["w"], im["h"]) == (w, h), im
        # laid out at a visible size (max-width may scale it down, never to nothing)
        assert im["rw"] > 0.5 * min(w, 600) and im["rh"] > 0.2 * min(h, 400), im
        # decoded pixels are a plot, not a blank canvas (axes, text, lines)
        assert im["ink"] == -1 or 0.005 < im["ink"] < 0.9, im


def test_tables_render_with_report_values(report, rendered):
    _, out = report
    probe, _ = rendered
    doc = json.loads((out / "report.json").read_text())
    tables = probe["tables"]
    assert len(tables) >= 2
    for t in tables:
        assert t["w"] > 100 and t["h"] > 12 * len(t["cells"]), t   # rows laid out, text-high
        assert len({len(row) for row in t["cells"]}) == 1, "ragged table"
    postures = next(t for t in tables if t["cells"][0][0] == "posture")
    assert [r[0] for r in postures["cells"][1:]] == [p["name"] for p in doc["postures"]]
    subset = next(t for t in tables if t["cells"][0][0] == "parameter")
    assert [r[0] for r in subset["cells"][1:]] == doc["subset"]["names"]
    shown = np.array([float(r[1]) for r in subset["cells"][1:]])
    assert np.allclose(shown, doc["subset"]["values"], rtol=1e-3, atol=1e-5)


def test_first_screen_is_not_blank(report):
    tmp, out = report
    shot = tmp / "screen.png"
    run = subprocess.run(_chromium_args(tmp / "chrome-shot")
                         + ["--window-size=1200,1600", f"--screenshot={shot}",
                            (out / "report.html").as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    import matplotlib.image as mpimg
    img = mpimg.imread(shot)[..., :3]
    assert img.shape[:2] == (1600, 1200)
    dark = (img.max(axis=2) < 0.5).mean()            # text and table rules
    assert 0.002 < dark < 0.5, dark


def test_first_screen_shows_the_green_lights(report):
    """A screenshot of the first 1280 x 900 screen: the checks' green lights are drawn on it
    (the demo passes every check), and no red or amber one."""
    tmp, out = report
    shot = tmp / "lights.png"
    run = subprocess.run(_chromium_args(tmp / "chrome-lights")
                         + [f"--window-size={SCREEN[0]},{SCREEN[1]}", f"--screenshot={shot}",
                            (out / "report.html").as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    import matplotlib.image as mpimg
    img = mpimg.imread(shot)[..., :3]
    assert img.shape[:2] == (SCREEN[1], SCREEN[0])

    def near(rgb):                                   # pixels of one CSS colour
        return int((np.abs(img - np.array(rgb) / 255.0).max(axis=2) < 0.04).sum())

    n_checks = len(json.loads((out / "report.json").read_text())["checks"])
    assert near((0x1e, 0x8e, 0x3e)) > 40 * n_checks           # a dot per check + the bar
    assert near((0xc5, 0x22, 0x1f)) == 0 and near((0xe3, 0x74, 0x00)) == 0


def test_summary_is_the_first_screen_and_a_figure_shows(report, rendered):
    """The report answers first. In a 1280 x 900 window (757 px of page in
    headless Chromium's --dump-dom) the summary starts at the
    top of the page (only the title line above it) and its verdict, segment table and check
    lights are all on that first screen; the table of contents links every section; the
    figures are laid out visibly with their captions."""
    _, out = report
    probe, html = rendered
    lay = probe["layout"]
    vw, vh = lay["viewport"]["w"], lay["viewport"]["h"]
    assert vw == SCREEN[0] and vh >= 700, lay["viewport"]     # (--dump-dom keeps some chrome)
    assert lay["sections"][0] == "summary"
    summ = lay["summary"]
    assert 0 <= summ["top"] < 0.15 * vh, summ                 # nothing but the title above
    for part in ("verdict", "segments", "checks"):
        box = lay[part]
        assert box is not None and box["h"] > 0, part
        assert box["top"] >= summ["top"] and box["bottom"] <= vh, (part, box, vh)
    doc = json.loads((out / "report.json").read_text())
    checks = next(t for t in probe["tables"] if t["cells"][0][:2] == ["status", "check"])
    assert [r[1] for r in checks["cells"][1:]] == [c["title"] for c in doc["checks"]]
    assert {r[0] for r in checks["cells"][1:]} == {"ok"}
    assert lay["toc"] == [f"#{s}" for s in lay["sections"]]
    figs = lay["figures"]
    assert len(figs) == len(list(out.glob("*.png")))
    for f in figs:
        assert f["visible"] and f["img"]["w"] > 300 and f["img"]["h"] > 100, f
        assert len(f["caption"]) > 30, f                      # a caption that says something
    # the ellipsoid view of the segments is among them, captioned as such
    assert any("inertia ellipsoid" in f["caption"] for f in figs)


def test_page_fits_a_laptop_screen_and_needs_no_emoji_font(report, rendered):
    """At 1280 px the page never scrolls sideways and no table overflows its box (a number
    and its ± std wrap as a unit); a figure's file name stays on one line; the check lights
    are CSS, so no character needs an emoji font (none is installed on many machines)."""
    probe, html = rendered
    lay = probe["layout"]
    assert lay["scroll_w"] <= lay["viewport"]["w"], lay["scroll_w"]
    for t in lay["wide"]:
        assert not t["scrolls"] and t["right"] <= lay["main_right"] + 0.5, t
    for f in lay["figures"]:
        assert f["file_lines"] == 1, f
    emoji = re.findall("[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF]", html)
    assert not emoji, sorted(set(emoji))

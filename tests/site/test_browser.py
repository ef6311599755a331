"""The built site (``make docs``) opened page by page in a real browser (Debian's chromium,
driven by Playwright through its executable path; nothing of Playwright's own browsers is used).

Every page loads from disk without console errors or network requests, every image decodes,
every internal link resolves, the ledger page has one row per ledger claim and filters them (by
select and by text), a formula on a notebook page is typeset by the site's own MathJax, and the
site's search finds "FedSUM". Readability, at 1400x900 and on a 390x844 phone: the ledger, the
gallery and each notebook page stay under their heights (:data:`MAX_HEIGHT`), no element is
wider than its column (what scrolls inside a block of its own is fine), each notebook page shows
its figures in its first screen, the landing page its four papers' cards; a click on a gallery
thumbnail opens its figure on the notebook page, a click on a figure enlarges it. Screenshots
are kept under ``build/site-test/`` (not committed).

Without a built site or without chromium these tests skip, unless ``FEDLIB_REQUIRE_SITE=1`` (set
by ``make test``, which builds the site and installs chromium first): then they fail.
"""

from __future__ import annotations

import csv
import html
import os
import re
import shutil
from collections import Counter
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from ..site_helpers import SITE, docs_build

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "build" / "site-test"
REQUIRED = os.environ.get("FEDLIB_REQUIRE_SITE") == "1"
#: flags of a headless chromium on a machine with no network: without the background-networking
#: ones chromium keeps trying to reach its update and sync services
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _chromium() -> str | None:
    return os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def _missing(what: str):
    if REQUIRED:
        pytest.fail(f"{what} (FEDLIB_REQUIRE_SITE=1: make test builds the site and installs chromium)")
    pytest.skip(what)


@pytest.fixture(scope="module")
def browser():
    if not (SITE / "index.html").exists():
        _missing(f"no built site at {SITE}: run `make docs`")
    exe = _chromium()
    if exe is None:
        _missing("no chromium: `make chromium` installs Debian's package")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("no playwright: the docs extra, pip install -e '.[docs]'")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        yield b
        b.close()


class Visit:
    """One page opened in a fresh browser page, with what it logged and what it asked the network."""

    def __init__(self, browser, path: Path, wait_mathjax: bool = False):
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page = browser.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

        def route(r):
            url = r.request.url
            if url.startswith(("file:", "data:", "blob:")):
                r.continue_()
            else:
                self.requests.append(url)
                r.abort()
        self.page.route("**/*", route)
        self.page.goto(path.as_uri(), wait_until="load")

    def close(self):
        self.page.close()


def _pages() -> list[Path]:
    return sorted(p for p in SITE.rglob("*.html") if "_static" not in p.parts and "_sources" not in p.parts)


_IDS: dict[Path, set[str]] = {}


def _ids(path: Path) -> set[str]:
    if path not in _IDS:
        _IDS[path] = set(re.findall(r'\bid="([^"]+)"', path.read_text(errors="replace")))
    return _IDS[path]


def _link_problems(rel, path: Path, hrefs: list[str]) -> list[str]:
    problems = []
    for href in hrefs:
        parts = urlsplit(href)
        if parts.scheme or parts.netloc or href.startswith(("javascript:", "mailto:")):
            continue
        target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
        if target.is_dir():
            target = target / "index.html"
        if not target.exists():
            problems.append(f"{rel}: link {href}: no file {target}")
        elif parts.fragment and target.suffix == ".html" and parts.fragment not in _ids(target):
            problems.append(f"{rel}: link {href}: no anchor #{parts.fragment} in {target.name}")
    return problems


def test_every_page_loads_clean_with_images_and_links(browser):
    pages = _pages()
    assert len(pages) > 20, f"only {len(pages)} pages under {SITE}"
    problems = []
    for path in pages:
        rel = path.relative_to(SITE)
        if rel.parts[0] == "_modules":
            # the highlighted sources (sphinx.ext.viewcode): the theme's page around code, no image
            # or script of the site's own; their links are checked from the HTML (a browser takes
            # a second per page of them)
            hrefs = re.findall(r'<a\b[^>]*\bhref="([^"]+)"', path.read_text())
            problems += _link_problems(rel, path, [html.unescape(h) for h in hrefs])
            continue
        v = Visit(browser, path)
        problems += [f"{rel}: console error: {e}" for e in v.errors]
        problems += [f"{rel}: network request: {u}" for u in v.requests]
        broken = v.page.eval_on_selector_all(
            "img", "els => els.filter(e => !(e.complete && e.naturalWidth > 0)).map(e => e.src.slice(0, 80))")
        problems += [f"{rel}: image does not decode: {s}" for s in broken]
        hrefs = v.page.eval_on_selector_all("a[href]", "els => els.map(e => e.getAttribute('href'))")
        problems += _link_problems(rel, path, hrefs)
        v.close()
    assert not problems, "\n".join(problems[:40])


def test_every_notebook_the_ledger_and_every_public_module_have_a_page():
    if not (SITE / "index.html").exists():
        _missing(f"no built site at {SITE}: run `make docs`")
    wanted = [f"notebooks/{nb.stem}.html" for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))]
    wanted += ["ledger.html", "index.html", "search.html", "api/index.html"]
    wanted += [f"api/{m}.html" for m in docs_build().public_modules()]
    missing = [w for w in wanted if not (SITE / w).exists()]
    assert len(wanted) > 40 and not missing, missing


def test_ledger_page_has_one_row_per_claim_and_filters_them(browser):
    with open(ROOT / "figures" / "claims_ledger.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    v = Visit(browser, SITE / "ledger.html")
    page = v.page
    assert page.locator("#ledger tr.claim").count() == len(rows)
    verdicts = Counter(r["verdict"] for r in rows)
    for verdict, n in verdicts.items():
        page.select_option("#ledger-verdict", verdict)
        assert page.locator("#ledger tr.claim:visible").count() == n, verdict
        assert page.inner_text("#ledger-count") == f"{n} of {len(rows)} rows"
    page.select_option("#ledger-verdict", "")
    paper = rows[0]["paper"]
    page.select_option("#ledger-paper", paper)
    assert page.locator("#ledger tr.claim:visible").count() == sum(r["paper"] == paper for r in rows)
    page.select_option("#ledger-paper", "")
    # the text filter: a row shows when its text (expander included) holds every word typed
    for words in ("scaffold", "FedSUM-CR fewer", "stunner"):
        page.fill("#ledger-text", words)
        want = sum(all(w.lower() in " ".join(r.values()).lower() for w in words.split()) for r in rows)
        assert 0 < want < len(rows), words
        assert page.locator("#ledger tr.claim:visible").count() == want, words
        assert page.inner_text("#ledger-count") == f"{want} of {len(rows)} rows"
    page.fill("#ledger-text", "")
    # a link may set the filters (the paper pages link to their rows)
    page.goto((SITE / "ledger.html").as_uri() + "?paper=" + paper.replace(" ", "%20"), wait_until="load")
    assert page.locator("#ledger tr.claim:visible").count() == sum(r["paper"] == paper for r in rows)
    assert not v.errors and not v.requests
    v.close()


def test_a_formula_on_a_notebook_page_is_typeset(browser):
    path = SITE / "notebooks" / "01_participation_delays.html"
    v = Visit(browser, path)
    page = v.page
    # MyST writes inline math as a span of class "math" holding \( ... \); MathJax 3 replaces
    # each by an <mjx-container> with an SVG, and keeps the TeX in its list of math items
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.document "
                           "&& document.querySelectorAll('.math').length > 0 && document.querySelectorAll("
                           "'.math mjx-container svg').length === document.querySelectorAll('.math').length",
                           timeout=60_000)
    typeset = page.evaluate("() => MathJax.startup.document.getMathItemsWithin(document.body)"
                            ".map(item => item.math)")
    assert any("\\tau" in t for t in typeset), typeset[:5]
    # the page's text less the code cells' sources (which hold TeX in plot labels, as code)
    prose = page.evaluate("() => { const a = document.querySelector('article').cloneNode(true); "
                          "a.querySelectorAll('.cell_input').forEach(e => e.remove()); return a.innerText; }")
    assert "\\tau" not in prose and "\\(" not in prose and "$\\" not in prose, "raw TeX in the page's prose"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "notebook_01.png"))
    assert not v.errors and not v.requests
    v.close()


def test_search_finds_fedsum_and_landing_page_screenshot(browser):
    v = Visit(browser, SITE / "search.html")
    page = v.page
    page.goto((SITE / "search.html").as_uri() + "?q=FedSUM", wait_until="load")
    page.wait_for_selector("#search-results ul.search li", timeout=30_000)
    assert page.locator("#search-results ul.search li").count() >= 3
    assert not v.errors and not v.requests
    v.close()
    v = Visit(browser, SITE / "index.html")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    v.page.screenshot(path=str(ARTIFACTS / "landing.png"), full_page=True)
    assert "Start here" in v.page.inner_text("body")
    v.close()


#: the most a page may measure (px, the document's scroll height), at 1400x900 and on a 390x844
#: phone: the ledger and the gallery about 8,000 px at 1400 (issue 52); a notebook page with its
#: code folded and its tables compact, a phone's narrower column wraps more
MAX_HEIGHT = {"ledger": (8_000, 12_000), "gallery": (8_000, 12_000), "notebook": (14_000, 20_000)}
#: on a phone the ledger shows each claim as a two-line block (about 95 px): its limit grows with
#: the ledger, at most this many px a claim row. At 1400 px a claim row is one or two lines (48 px
#: measured); issue 52's 8,000 px was set for 127 claims (6,048 px measured) and grows with the
#: ledger at 60 px a claim (166 claims: 9,960 px), so a ledger of more claims stays compact per row
#: rather than fixed in total
PHONE_PX_PER_CLAIM = 120
DESKTOP_PX_PER_CLAIM = 60
VIEWPORTS = {"desktop": (1400, 900), "phone": (390, 844)}

#: elements wider than the page's column (the article), less those inside a block that scrolls
#: or clips them (a code cell or a wide table scrolls inside its own block)
_TOO_WIDE = """() => {
  const col = document.querySelector('article.bd-article'); const r = col.getBoundingClientRect();
  const out = [];
  for (const e of col.querySelectorAll('*')) {
    const q = e.getBoundingClientRect();
    if (q.width === 0 || (q.right <= r.right + 1 && q.left >= r.left - 1)) continue;
    let clipped = false;
    for (let a = e.parentElement; a && a !== col; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== 'visible') { clipped = true; break; } }
    const by = Math.round(Math.max(q.right - r.right, r.left - q.left));
    if (!clipped) out.push(`${e.tagName}.${e.className} by ${by} px`);
  }
  return out.slice(0, 5); }"""


def _ledger_rows() -> int:
    """Claim rows of the committed ledger (``figures/claims_ledger.csv``)."""
    with open(ROOT / "figures" / "claims_ledger.csv", newline="") as f:
        return sum(1 for _ in csv.DictReader(f))


def _readable_pages() -> list[tuple[str, str]]:
    pages = [("ledger", "ledger.html"), ("gallery", "gallery.html"), ("landing", "index.html")]
    pages += [("other", p) for p in ("notebooks/index.html", "algorithms.html", "api/index.html",
                                     "contributing.html", "cite.html")]
    pages += [("notebook", f"notebooks/{nb.stem}.html")
              for nb in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))]
    pages += [("paper", p.relative_to(SITE).as_posix()) for p in sorted((SITE / "papers").glob("*.html"))]
    return pages


@pytest.mark.parametrize("viewport", sorted(VIEWPORTS))
def test_pages_fit_their_column_and_their_height(browser, viewport):
    width, height = VIEWPORTS[viewport]
    ctx = browser.new_context(viewport={"width": width, "height": height})
    problems, measured = [], {}
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for kind, rel in _readable_pages():
        page = ctx.new_page()
        page.goto((SITE / rel).as_uri(), wait_until="load")
        tall = page.evaluate("document.documentElement.scrollHeight")
        measured[rel] = tall
        if kind in MAX_HEIGHT:
            limit = MAX_HEIGHT[kind][viewport == "phone"]
            if kind == "ledger":
                per_claim = PHONE_PX_PER_CLAIM if viewport == "phone" else DESKTOP_PX_PER_CLAIM
                limit = max(limit, per_claim * _ledger_rows())
            if tall > limit:
                problems.append(f"{rel}: {tall} px tall at {width}x{height} (at most {limit})")
        problems += [f"{rel} at {width}px: wider than its column: {w}" for w in page.evaluate(_TOO_WIDE)]
        if kind == "notebook":
            # results first: the page's figures (their thumbnails) show in its first screen
            top = page.evaluate("() => { const i = document.querySelector('.fig-strip img'); "
                                "return i ? i.getBoundingClientRect().top : null; }")
            if top is None or top > height:
                problems.append(f"{rel}: no figure in the first screen at {width}x{height} (top {top})")
            missing = page.evaluate("() => Array.from(document.querySelectorAll('.cell_output img'))"
                                    ".filter(i => !i.alt || i.alt.includes('_images/')).length")
            if missing:
                problems.append(f"{rel}: {missing} figure(s) without an alt text saying what they show")
        if kind == "landing" and viewport == "desktop":
            cards = page.evaluate("() => Array.from(document.querySelectorAll('.paper-card'))"
                                  ".map(c => c.getBoundingClientRect().bottom)")
            if len(cards) != 4 or max(cards) > height:
                problems.append(f"index.html: the papers' cards end at {cards} (first screen: {height})")
        if kind not in ("paper", "other") and (kind != "notebook" or rel.startswith("notebooks/02")):
            page.screenshot(path=str(ARTIFACTS / f"{rel.replace('/', '_')[:-5]}_{viewport}.png"))
        page.close()
    ctx.close()
    (ARTIFACTS / f"heights_{viewport}.txt").write_text("".join(f"{k}\t{v}\n" for k, v in measured.items()))
    assert not problems, "\n".join(problems)


def test_gallery_thumbnail_opens_its_figure_and_a_figure_enlarges(browser):
    v = Visit(browser, SITE / "gallery.html")
    page = v.page
    cards = page.locator("figure.g-card > a")
    assert cards.count() == len(list((ROOT / "figures").glob("*/*.png")))
    href = cards.nth(3).get_attribute("href")
    cards.nth(3).click()
    page.wait_for_load_state("load")
    path, _, fragment = page.url.partition("#")
    assert path.endswith(href.split("#")[0]) and fragment == href.split("#")[1]
    target = page.locator(f"#{fragment}")
    assert target.count() == 1 and target.evaluate("e => e.tagName") == "IMG"
    box = target.bounding_box()
    assert box is not None and 0 <= box["y"] < page.viewport_size["height"], box   # scrolled to it
    target.click()
    assert page.locator(".fl-zoom img").count() == 1
    page.keyboard.press("Escape")
    assert page.locator(".fl-zoom").count() == 0
    assert not v.errors and not v.requests
    v.close()

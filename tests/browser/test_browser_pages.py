"""Every page of the built site, as a reader's browser shows it.

Each page is opened once, in Chromium at a desktop's width, from a loopback
server with every request to another origin refused (conftest.py), and all its
checks run on that one load:

* complete and self-contained: no console error, no foreign request, every
  equation rendered (no raw TeX), every code output and figure the executed
  notebook has, every image loaded;
* accessible: no serious or critical axe-core violation in its text, in the light
  theme and (for the colour rules, all the palette changes) in the dark one; the
  header and sidebar every page shares are audited once, on the landing page;
* its checked claims, where it has any: the reveal highlights each checked
  sentence as the sentence, and turned off leaves the page as it was
  (test_browser_checked_claims.py's ``highlight_problems``, before axe lays out
  every section);

(A phone's width, on every page and on a page of each template with its hidden
answers opened: test_browser_phone_fit.py.)
"""

from __future__ import annotations

import json
from urllib.parse import urlparse

import pytest
from built_site import PHONE, SITE, accessibility_problems, inject_axe, next_frame, site_pages
from test_browser_checked_claims import CLAIMED, highlight_problems

pytestmark = [pytest.mark.browser, pytest.mark.build]

PAGES = site_pages()

# TeX that must never reach a reader as text: display/inline delimiters, the
# writer's placeholders, and the commands every page's equations use.
RAW_TEX = ["$$", "\\begin{", "\\end{", "\\frac", "\\partial", "\\(", "\\)", "\\[", "\\]",
           "\\top", "\\mathbb"]

# The visible prose of a page: code, outputs and the MathML kept for screen
# readers (hidden) are not prose.
PROSE_TEXT = """() => {
  const article = document.querySelector('article') || document.body;
  const copy = article.cloneNode(true);
  copy.querySelectorAll('pre, code, .highlight, .cell_output, mjx-assistive-mml, script, style')
      .forEach(el => el.remove());
  return copy.innerText;
}"""

SHOWN_OUTPUTS = """() => [...document.querySelectorAll('div.cell')]
  .map(cell => cell.querySelector('.cell_output'))
  .filter(Boolean)
  .map(out => ({text: out.innerText.trim().length,
                images: out.querySelectorAll('img, svg:not(mjx-container svg)').length}))"""

def expected_outputs(page: str) -> list[dict]:
    """The outputs a reader should see on an executed page, from the notebook the
    build executed (myst-nb's copy in jupyter_execute, which the page is rendered
    from; the download is made for a reader's Python and shapes cells its own way)."""
    notebook = SITE.parent / "jupyter_execute" / page.replace(".html", ".ipynb")
    if not notebook.is_file():
        return []
    shown = []
    for cell in json.loads(notebook.read_text(encoding="utf8"))["cells"]:
        tags = set(cell.get("metadata", {}).get("tags", []))
        if cell["cell_type"] != "code" or tags & {"remove-cell", "remove-output"}:
            continue
        if cell.get("outputs"):
            shown.append({
                "images": sum("image/png" in out.get("data", {}) or "image/svg+xml"
                              in out.get("data", {}) for out in cell["outputs"]),
            })
    return shown


def completeness_problems(page, path: str) -> list[str]:
    problems = []
    html = page.content()
    if "data-math-pending" in html:
        problems.append("an equation was left unrendered (svg_math placeholder in the page)")
    unrendered = page.evaluate("""() => [...document.querySelectorAll('.math')]
        .filter(el => !el.querySelector('mjx-container svg')).map(el => el.textContent)""")
    if unrendered:
        problems.append(f"equations without an SVG: {unrendered[:3]}")
    prose = page.evaluate(PROSE_TEXT)
    raw = [tex for tex in RAW_TEX if tex in prose]
    if raw:
        problems.append(f"raw TeX visible in the text: {raw}")

    # Outputs and figures: as many as the executed notebook holds, each non-empty.
    expected, shown = expected_outputs(path), page.evaluate(SHOWN_OUTPUTS)
    if len(shown) != len(expected):
        problems.append(f"{len(expected)} code outputs in the executed notebook, "
                        f"{len(shown)} on the page")
    for index, (want, got) in enumerate(zip(expected, shown)):
        if got["text"] == 0 and got["images"] == 0:
            problems.append(f"output {index + 1} is empty on the page")
        if got["images"] < want["images"]:
            problems.append(f"output {index + 1}: {want['images']} figure(s) expected, "
                            f"{got['images']} shown")
    broken = page.evaluate("""() => [...document.images]
        .filter(img => !(img.complete && img.naturalWidth > 0)).map(img => img.src)""")
    if broken:
        problems.append(f"images that did not load: {broken}")
    return problems


def test_the_site_has_pages():
    assert PAGES, f"no pages found in {SITE}: run `make html` first (`make test` does)"


@pytest.mark.parametrize("path", PAGES)
def test_page_is_complete_and_accessible_in_light_and_dark(page, traffic, path):
    page.goto(path, wait_until="load")
    next_frame(page)
    problems = highlight_problems(page, path) if path in CLAIMED else []
    inject_axe(page)  # lays out every section: after the highlights' on and off
    problems += completeness_problems(page, path)
    problems += accessibility_problems(page, "article")
    problems += [f"request to another origin (the page must work offline): {url}"
                 for url in traffic.foreign_requests]
    problems += [f"console error: {error}" for error in traffic.console_errors]
    assert not problems, f"{path}:\n  " + "\n  ".join(problems)


def test_a_request_to_another_origin_is_refused_and_recorded(page, traffic, base_url):
    """What "no foreign request" above rests on: the browser reaches no host but the
    site's (conftest.CHROMIUM_ARGS), and ``traffic`` names each request a page made
    elsewhere. ``localhost`` at the site's own port would answer without the
    browser's refusal; port 9 of the site's host answers nothing either way."""
    page.goto("index.html", wait_until="load")
    site = urlparse(base_url)
    elsewhere = ["https://cdn.example.org/mathjax.js",
                 f"http://localhost:{site.port}{site.path}index.html",
                 f"http://{site.hostname}:9/font.woff2"]
    reached = page.evaluate("""urls => Promise.all(urls.map(url => fetch(url, {mode: 'no-cors'})
        .then(() => url, () => null)))""", elsewhere)
    for _ in range(100):  # the failures' events reach Python after the page sees them
        if len(traffic.foreign_requests) >= len(elsewhere):
            break
        page.wait_for_timeout(50)
    assert reached == [None] * len(elsewhere), f"the browser reached another origin: {reached}"
    assert sorted(traffic.foreign_requests) == sorted(elsewhere), traffic.foreign_requests


def test_the_header_and_sidebar_every_page_shares_are_accessible(page, traffic):
    """The parts outside ``article`` are the same template on every page: audit
    them once, whole page, on the landing page, at a desktop's and a phone's width."""
    page.goto("index.html", wait_until="load")
    inject_axe(page)
    problems = accessibility_problems(page, "html")
    page.set_viewport_size(PHONE)
    next_frame(page)
    problems += [f"at {PHONE['width']} px: {problem}"
                 for problem in accessibility_problems(page, "html")]
    problems += [f"console error: {error}" for error in traffic.console_errors]
    assert not problems, "\n  ".join(problems)

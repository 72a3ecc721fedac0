"""Every page of the built site, as a reader's browser shows it.

Each page is opened in Chromium from a loopback server, with every request to
another origin refused (see browser_support.py), and must show: no console error, no
foreign request, every equation rendered (no raw TeX), every code output and
figure the executed notebook has, no sideways scrolling at a phone's width, and
no serious or critical accessibility violation (axe-core) in light or dark theme.
"""

from __future__ import annotations

import json

import pytest

from browser_support import AXE, ROOT, SITE, site_pages

PAGES = site_pages()
PHONE_WIDTH = 375

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


def expected_outputs(page: str) -> list[dict]:
    """The outputs a reader should see on an executed page, from its notebook."""
    notebook = SITE / page.replace(".html", ".ipynb")
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


def inject_axe(visit) -> None:
    if not AXE.is_file():
        pytest.fail(f"{AXE.relative_to(ROOT)} missing: run `npm ci` (`make test` does)",
                    pytrace=False)
    visit.page.add_script_tag(path=str(AXE))


def test_the_site_has_pages():
    assert PAGES, f"no pages found in {SITE}: run `make html` first (`make test` does)"


@pytest.mark.parametrize("page", PAGES)
def test_page_is_complete_and_self_contained(open_page, page):
    visit = open_page(page)
    p = visit.page
    name = f"complete-{page}"
    visit.check(not visit.foreign_requests, name,
                "requests to another origin (the page must work offline):\n    "
                + "\n    ".join(visit.foreign_requests))
    visit.check(not visit.console_errors, name,
                "console errors:\n    " + "\n    ".join(visit.console_errors))

    # Math: every equation became an SVG, and no raw TeX shows in the prose.
    html = p.content()
    visit.check("data-math-pending" not in html, name,
                "an equation was left unrendered (svg_math placeholder in the page)")
    unrendered = p.evaluate("""() => [...document.querySelectorAll('.math')]
        .filter(el => !el.querySelector('mjx-container svg')).map(el => el.textContent)""")
    visit.check(not unrendered, name, f"equations without an SVG: {unrendered[:3]}")
    prose = p.evaluate(PROSE_TEXT)
    raw = [tex for tex in RAW_TEX if tex in prose]
    visit.check(not raw, name, f"raw TeX visible in the text: {raw}")

    # Outputs and figures: as many as the executed notebook holds, each non-empty.
    expected = expected_outputs(page)
    shown = p.evaluate("""() => [...document.querySelectorAll('div.cell')]
        .map(cell => cell.querySelector('.cell_output'))
        .filter(Boolean)
        .map(out => ({text: out.innerText.trim().length,
                      images: out.querySelectorAll('img, svg:not(mjx-container svg)').length}))""")
    visit.check(len(shown) == len(expected), name,
                f"{len(expected)} code outputs in the executed notebook, "
                f"{len(shown)} on the page")
    for index, (want, got) in enumerate(zip(expected, shown)):
        visit.check(got["text"] > 0 or got["images"] > 0, name,
                    f"output {index + 1} is empty on the page")
        visit.check(got["images"] >= want["images"], name,
                    f"output {index + 1}: {want['images']} figure(s) expected, "
                    f"{got['images']} shown")
    broken = p.evaluate("""() => [...document.images]
        .filter(img => !(img.complete && img.naturalWidth > 0)).map(img => img.src)""")
    visit.check(not broken, name, f"images that did not load: {broken}")


@pytest.mark.parametrize("page", PAGES)
def test_page_fits_a_phone(open_page, page):
    visit = open_page(page, width=PHONE_WIDTH)
    overflow = visit.page.evaluate("""() => {
      const root = document.documentElement;
      // What sticks out past the text column's right edge and is not inside a box
      // that scrolls (site.js gives those tabindex) or text kept for screen readers
      // only: furo's content box then scrolls sideways, or the screen cuts it off.
      const article = document.querySelector('article');
      const edge = Math.min(article.getBoundingClientRect().right, root.clientWidth) + 1;
      const hidden = '[tabindex], mjx-assistive-mml, .visually-hidden, .headerlink';
      const boxed = 'img, svg, mjx-container, table, pre';
      // How far right a thing is drawn: its box, or for text its glyphs.
      const right = el => {
        if (el.matches(boxed)) return el.getBoundingClientRect().right;
        const range = document.createRange();
        range.selectNodeContents(el);
        return range.getBoundingClientRect().right;
      };
      const wide = [...article.querySelectorAll('*')]
        .filter(el => !el.closest('svg, mjx-container *'))
        .filter(el => el.matches(boxed) || (el.children.length === 0 && el.textContent.trim()))
        .filter(el => right(el) > edge)
        .filter(el => !el.closest(hidden))
        .slice(0, 5).map(el => el.tagName.toLowerCase() + (el.className && el.className.baseVal === undefined
                                ? '.' + el.className : '') + ': ' + (el.textContent || '').trim().slice(0, 40));
      return {scroll: root.scrollWidth, width: root.clientWidth, wide};
    }""")
    visit.check(overflow["scroll"] <= overflow["width"], f"phone-{page}",
                f"at {PHONE_WIDTH} px the page scrolls sideways: "
                f"{overflow['scroll']} px wide in a {overflow['width']} px viewport; "
                f"too wide: {overflow['wide']}")
    visit.check(not overflow["wide"], f"phone-{page}",
                f"at {PHONE_WIDTH} px these run past the text column's edge: "
                f"{overflow['wide']}")
    # On a phone more code and outputs scroll sideways: each must take keyboard focus.
    inject_axe(visit)
    unreachable = visit.page.evaluate("""async () => (await axe.run(document,
        {runOnly: {type: 'rule', values: ['scrollable-region-focusable']}}))
        .violations.flatMap(v => v.nodes.map(n => n.target.join(' ')))""")
    visit.check(not unreachable, f"phone-{page}",
                f"at {PHONE_WIDTH} px these scroll but take no keyboard focus: {unreachable[:5]}")


AXE_SERIOUS = """async () => {
  const results = await axe.run(document, {resultTypes: ['violations']});
  return results.violations
    .filter(v => v.impact === 'serious' || v.impact === 'critical')
    .map(v => `${v.impact}: ${v.id} (${v.help}) at ` +
              v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | '));
}"""


@pytest.mark.parametrize("page", PAGES)
def test_page_is_accessible_in_light_and_dark(open_page, page):
    visit = open_page(page)
    inject_axe(visit)
    for theme in ["light", "dark"]:
        # As furo's toggle does: the body's data-theme picks the palette.
        visit.page.evaluate(f"document.body.dataset.theme = '{theme}'")
        visit.page.wait_for_timeout(50)
        violations = visit.page.evaluate(AXE_SERIOUS)
        visit.check(not violations, f"axe-{theme}-{page}",
                    f"accessibility violations ({theme} theme):\n    "
                    + "\n    ".join(violations))

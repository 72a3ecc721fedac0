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

A sample holding a page of each template (``TEMPLATES``) is opened again at a
phone's width (375 px), its hidden answers opened: nothing runs past the text
column's edge except inside a box of its own that scrolls sideways and takes
keyboard focus; no code block or output on the first pages a reader opens
scrolls sideways, and at most half of the sample's do. (That no visible code
line is wider than a phone's 44 columns, on any page, the build checks.)
"""

from __future__ import annotations

import json

import pytest
from built_site import PHONE, SITE, inject_axe, next_frame, site_pages

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

# What reaches past the text column's right edge at a phone's width. A box that
# scrolls sideways (overflow-x auto or scroll) may hold something wider than
# itself, as long as the box itself ends inside the column: the reader scrolls
# that box, never the page. Anything else past the edge makes furo's content
# box scroll sideways, or is cut off by the screen. Text kept for screen
# readers only is not drawn, so it cannot stick out.
PAST_THE_EDGE = """() => {
  const root = document.documentElement;
  const article = document.querySelector('article');
  const edge = Math.min(article.getBoundingClientRect().right, root.clientWidth) + 1;
  const unseen = 'mjx-assistive-mml, .visually-hidden, .headerlink';
  const boxed = 'img, svg, mjx-container, table, pre';
  const scrolls = el => ['auto', 'scroll'].includes(getComputedStyle(el).overflowX);
  const name = el => el.tagName.toLowerCase() +
    (typeof el.className === 'string' && el.className ? '.' + el.className : '') + ': ' +
    (el.textContent || '').trim().slice(0, 40);
  // How far right a thing is drawn: its box, or for text its glyphs.
  const right = el => {
    if (el.matches(boxed) || scrolls(el)) return el.getBoundingClientRect().right;
    const range = document.createRange();
    range.selectNodeContents(el);
    return range.getBoundingClientRect().right;
  };
  // The nearest box around el that does not let it overflow: it scrolls (and is
  // inside the column), or it clips (and the reader never sees the rest).
  const insideItsOwnScrollingBox = el => {
    for (let box = el.parentElement; box && box !== article; box = box.parentElement) {
      const overflow = getComputedStyle(box).overflowX;
      if (overflow === 'auto' || overflow === 'scroll') return right(box) <= edge;
      if (overflow === 'hidden' || overflow === 'clip') return false;
    }
    return false;
  };
  const wide = [...article.querySelectorAll('*')]
    .filter(el => !el.closest('svg, mjx-container *'))
    .filter(el => el.matches(boxed) || scrolls(el)
                  || (el.children.length === 0 && el.textContent.trim()))
    .filter(el => !el.closest(unseen))
    .filter(el => right(el) > edge)
    .filter(el => !insideItsOwnScrollingBox(el))
    .slice(0, 5).map(name);
  return {scroll: root.scrollWidth, width: root.clientWidth, wide};
}"""

AXE_SERIOUS = """async ([context, rules]) => {
  const options = {resultTypes: ['violations']};
  if (rules) options.runOnly = {type: 'rule', values: rules};
  const results = await axe.run(context, options);
  return results.violations
    .filter(v => v.impact === 'serious' || v.impact === 'critical')
    .map(v => `${v.impact}: ${v.id} (${v.help}) at ` +
              v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | '));
}"""
# What a palette can break: the dark theme changes colours and nothing else, so
# it is audited for these only (the light theme runs every rule). Half the time.
COLOUR_RULES = ["color-contrast", "link-in-text-block"]

UNFOCUSABLE_SCROLLERS = """async () => (await axe.run('article',
    {runOnly: {type: 'rule', values: ['scrollable-region-focusable']}}))
    .violations.flatMap(v => v.nodes.map(n => n.target.join(' ')))"""


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


def accessibility_problems(page, context: str) -> list[str]:
    """Serious axe violations inside ``context`` (a selector): every rule in the
    light theme, the colour rules in the dark one."""
    problems = []
    for theme, rules in [("light", None), ("dark", COLOUR_RULES)]:
        # As furo's toggle does: the body's data-theme picks the palette.
        page.evaluate(f"document.body.dataset.theme = '{theme}'")
        problems += [f"accessibility ({theme} theme): {violation}"
                     for violation in page.evaluate(AXE_SERIOUS, [context, rules])]
    return problems


def phone_problems(page) -> list[str]:
    page.set_viewport_size(PHONE)
    next_frame(page)
    problems = []
    overflow = page.evaluate(PAST_THE_EDGE)
    if overflow["scroll"] > overflow["width"]:
        problems.append(f"at {PHONE['width']} px the page scrolls sideways: "
                        f"{overflow['scroll']} px wide in a {overflow['width']} px viewport")
    if overflow["wide"]:
        problems.append(f"at {PHONE['width']} px these run past the text column's edge, "
                        f"outside a box that scrolls: {overflow['wide']}")
    # More code, outputs and tables scroll on a phone: each must take keyboard focus.
    unreachable = page.evaluate(UNFOCUSABLE_SCROLLERS)
    if unreachable:
        problems.append(f"at {PHONE['width']} px these scroll but take no keyboard focus: "
                        f"{unreachable[:5]}")
    return problems


# Every code block and output of the open page (the answers behind toggles
# opened), as [is an output?, scrolls sideways?, its first line].
CODE_BLOCKS = """() => {
  document.querySelectorAll('article details').forEach(d => { d.open = true; });
  return [...document.querySelectorAll('article div.highlight pre, article .cell_output pre')]
    .filter(pre => pre.getClientRects().length)
    .map(pre => [Boolean(pre.closest('.cell_output, .output')),
                 pre.scrollWidth > pre.clientWidth + 1,
                 pre.textContent.trim().split('\\n')[0].slice(0, 60)]);
}"""

# The pages a newcomer reads first: the landing page and the two tutorials.
FIRST_PAGES = ["index.html", "tutorial/why-backward-z-gives-z.html",
               "tutorial/compute-your-first-jacobian.html"]
# A page of each kind the site has, by what lays it out: the landing page and
# the first pages, a section's index, an explanation drawn with equations and
# figures, a how-to, the tables of the error messages, the glossary's list,
# furo's index, search and 404 templates.
TEMPLATES = [*FIRST_PAGES, "tutorial/index.html",
             "explanation/jacobians-of-vector-functions.html",
             "how-to/check-gradients.html", "reference/error-messages.html",
             "reference/glossary.html", "genindex.html", "search.html", "404.html"]


def test_the_site_has_pages():
    assert PAGES, f"no pages found in {SITE}: run `make html` first (`make test` does)"
    assert set(TEMPLATES) <= set(PAGES), f"sample pages gone: {set(TEMPLATES) - set(PAGES)}"


@pytest.mark.parametrize("path", PAGES)
def test_page_is_complete_and_accessible_in_light_and_dark(page, traffic, path):
    page.goto(path, wait_until="load")
    inject_axe(page)
    problems = completeness_problems(page, path)
    problems += accessibility_problems(page, "article")
    problems += [f"request to another origin (the page must work offline): {url}"
                 for url in traffic.foreign_requests]
    problems += [f"console error: {error}" for error in traffic.console_errors]
    assert not problems, f"{path}:\n  " + "\n  ".join(problems)


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


def test_a_page_of_each_template_fits_a_phone(page, traffic):
    page.set_viewport_size(PHONE)
    problems, blocks = [], {"code": [0, 0], "outputs": [0, 0]}
    for path in TEMPLATES:
        page.goto(path, wait_until="load")
        inject_axe(page)
        code_blocks = page.evaluate(CODE_BLOCKS)  # opens the hidden answers first
        problems += [f"{path}: {problem}" for problem in phone_problems(page)]
        for is_output, scrolls, first_line in code_blocks:
            kind = "outputs" if is_output else "code"
            blocks[kind][0] += scrolls
            blocks[kind][1] += 1
            if scrolls and path in FIRST_PAGES:
                problems.append(f"{path}: this {kind.removesuffix('s')} scrolls sideways "
                                f"(shorten its lines to 44 columns): {first_line!r}")
    print(", ".join(f"{kind}: {scrolling} of {total} scroll sideways at {PHONE['width']} px"
                    for kind, (scrolling, total) in blocks.items()))
    assert blocks["code"][1] > 20, f"only {blocks['code'][1]} code blocks: is the site built?"
    problems += [f"more than half of the sample's {kind} scroll sideways: {scrolling} of {total}"
                 for kind, (scrolling, total) in blocks.items() if scrolling > total / 2]
    problems += [f"console error: {error}" for error in traffic.console_errors]
    assert not problems, "\n  ".join(problems)

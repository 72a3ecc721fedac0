"""The site ``make html`` built, and the few page helpers the browser tests share."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "_build" / "html"
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 375, "height": 900}


def site_pages() -> list[str]:
    """Every HTML page of the built site, as paths relative to its root."""
    if not SITE.is_dir():
        return []
    return sorted(p.relative_to(SITE).as_posix() for p in SITE.rglob("*.html")
                  if not p.relative_to(SITE).parts[0].startswith("_"))


def site_prefix() -> str:
    """The path the site is served under when hosted, e.g. ``/en/latest/``.

    Read from robots.txt's sitemap line, which the build writes from html_baseurl.
    """
    robots = SITE / "robots.txt"
    if robots.is_file():
        for line in robots.read_text(encoding="utf8").splitlines():
            if line.startswith("Sitemap:"):
                return urlparse(line.split(":", 1)[1].strip()).path.rsplit("/", 1)[0] + "/"
    return "/"


def next_frame(page) -> None:
    """Wait until the browser has rendered a frame: resize and ResizeObserver
    callbacks (site.js) have run by then."""
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => "
                  "requestAnimationFrame(done)))")


def render_every_section(page) -> None:
    """Lay out the sections site.css leaves unrendered below the screen
    (``content-visibility: auto``), as a reader's scrolling does, and wait for
    what site.js does when they render: a measurement or axe sees every box."""
    page.add_style_tag(content="article > section > section "
                               "{ content-visibility: visible !important; }")
    next_frame(page)


def inject_axe(page) -> None:
    """axe, after every section is rendered: it skips boxes that are not."""
    render_every_section(page)
    if not AXE.is_file():
        pytest.fail(f"{AXE.relative_to(ROOT)} missing: run `npm ci` (`make test` does)",
                    pytrace=False)
    page.add_script_tag(path=str(AXE))


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


def accessibility_problems(page, context: str, dark: bool = True) -> list[str]:
    """Serious axe violations inside ``context`` (a selector): every rule in the
    light theme, the colour rules in the dark one (``dark=False``: light only, for
    a second width of a page whose palette was audited at the first)."""
    problems = []
    for theme, rules in [("light", None), ("dark", COLOUR_RULES)][:2 if dark else 1]:
        # As furo's toggle does: the body's data-theme picks the palette.
        page.evaluate(f"document.body.dataset.theme = '{theme}'")
        problems += [f"accessibility ({theme} theme): {violation}"
                     for violation in page.evaluate(AXE_SERIOUS, [context, rules])]
    return problems

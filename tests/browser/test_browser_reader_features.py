"""What a reader does with the site: switch theme, copy code, download, go offline.

(Search: test_search_ranking.py, every query a reader types.)"""

from __future__ import annotations

import importlib.metadata
import json
import re

import pytest
from built_site import SITE, site_pages
from playwright.sync_api import expect

from autograd_docs.html.notebooks import PROVENANCE

pytestmark = [pytest.mark.browser, pytest.mark.build]

TUTORIAL = "tutorial/why-backward-z-gives-z.html"
DOCTESTS = "reference/differentiation-apis.html"  # a page with {doctest} blocks


def test_theme_toggle_cycles_and_repaints(page, traffic):
    page.goto(TUTORIAL)
    toggle = page.locator(".theme-toggle-header .theme-toggle, "
                          ".theme-toggle-content .theme-toggle").locator("visible=true").first
    body = page.locator("body")
    seen = {}
    for _ in range(3):
        before = body.get_attribute("data-theme")
        toggle.click()
        expect(body).not_to_have_attribute("data-theme", before or "")
        theme = body.get_attribute("data-theme")
        seen[theme] = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
    assert set(seen) == {"auto", "light", "dark"}, (
        f"three clicks should visit auto, light and dark; saw {sorted(seen)}")
    assert seen["light"] != seen["dark"], (
        f"light and dark themes have the same background {seen['light']}")
    remembered = page.evaluate("() => localStorage.getItem('theme')")
    assert remembered == theme, (
        f"the page shows {theme!r} but remembers {remembered!r} for the next page")
    assert not traffic.console_errors


def copied_text(page, block) -> str:
    """Press the copy button on ``block``; what lands on the clipboard."""
    sentinel = "nothing copied yet"
    page.evaluate("text => navigator.clipboard.writeText(text)", sentinel)
    block.hover()
    block.locator("button.copybtn").click()
    page.wait_for_function(
        "async sentinel => (await navigator.clipboard.readText()) !== sentinel", arg=sentinel)
    return page.evaluate("() => navigator.clipboard.readText()")


@pytest.mark.browser_context_args(permissions=["clipboard-read", "clipboard-write"])
def test_copy_button_copies_code_only(page, traffic):
    page.goto(TUTORIAL)
    notebook = json.loads((SITE / TUTORIAL.replace(".html", ".ipynb")).read_text("utf8"))
    first_shown = next(
        cell for cell in notebook["cells"] if cell["cell_type"] == "code"
        and "remove-cell" not in cell.get("metadata", {}).get("tags", [])
        and "remove-input" not in cell.get("metadata", {}).get("tags", [])
        and PROVENANCE not in cell.get("metadata", {}).get("tags", [])  # the download's own
    )
    source = "".join(first_shown["source"]).strip()

    cell = page.locator("div.cell div.cell_input div.highlight").first
    copied = copied_text(page, cell).strip()
    assert copied == source, (
        f"the copy button on the first code cell copied\n{copied!r}\nnot its code\n{source!r}")

    # A block with prompts and outputs (a doctest): only what a reader types.
    page.goto(DOCTESTS)
    doctest = page.locator("div.highlight:has(.gp)").first
    expect(doctest).to_have_count(1)
    copied = copied_text(page, doctest)
    assert ">>>" not in copied and "..." not in copied.split("\n")[0], (
        f"prompts were copied: {copied!r}")
    outputs = [line.strip() for line in
               page.locator("div.highlight:has(.gp) .go").all_inner_texts()]
    typed = {line.strip() for line in copied.splitlines()}
    leaked = [line for line in outputs if line and line in typed]
    assert not leaked, f"outputs were copied: {leaked} in {copied!r}"
    assert copied.strip() != "", "nothing was copied"
    assert not traffic.console_errors


def test_executed_page_downloads_as_notebook_and_source(page, traffic):
    page.goto(TUTORIAL)
    notebook_link = page.locator(".download-notebook a")
    expect(notebook_link).to_have_count(1)
    href = notebook_link.get_attribute("href")
    response = page.request.get(page.url.rsplit("/", 1)[0] + "/" + href)
    assert response.ok, f"{href} answers {response.status}"
    notebook = json.loads(response.text())
    outputs = sum(len(c.get("outputs", [])) for c in notebook["cells"]
                  if c["cell_type"] == "code")
    assert outputs > 0, f"{href} has no outputs: not the executed notebook"

    source_link = page.locator(".view-this-page:not(.download-notebook) a").first
    source = page.request.get(source_link.evaluate("a => a.href"))
    assert source.ok and "{code-cell}" in source.text(), (
        "the 'view source' link does not serve the page's MyST source")


@pytest.mark.parametrize("width", [375, 1280])
def test_a_page_says_which_torch_made_it_and_when_it_last_changed(page, traffic, width):
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(TUTORIAL)
    footer = page.locator(".bottom-of-page .last-updated")
    footer.scroll_into_view_if_needed()
    for scheme in ("light", "dark"):  # the reader's scheme switched in one load
        page.emulate_media(color_scheme=scheme)
        expect(footer).to_be_visible()
        # The date comes from git (a clone has it); the torch is the one installed.
        expect(footer).to_have_text(re.compile(
            r"Last updated on \d{4}-\d{2}-\d{2} · outputs made with torch "
            + re.escape(importlib.metadata.version("torch")) + "$"))
        box = footer.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, (
            f"the line runs past the {width} px screen ({scheme}): {box}")
    assert not traffic.console_errors


def base_url_of_sitemap(locs: set[str]) -> str:
    """html_baseurl, as the sitemap spells it: where the landing page lives."""
    index = min((loc for loc in locs if loc.endswith("/index.html")), key=len)
    return index[: -len("index.html")]


def test_metadata_and_sitemap(page, traffic, base_url):
    page.goto(TUTORIAL)
    og = dict(page.eval_on_selector_all(
        "meta[property^='og:']", "ms => ms.map(m => [m.getAttribute('property'), m.content])"))
    assert {"og:title", "og:url", "og:type", "og:description"} <= set(og), (
        f"OpenGraph tags missing; found {sorted(og)}")
    sitemap = page.request.get(base_url + "sitemap.xml").text()
    listed = set(re.findall(r"<loc>([^<]*)</loc>", sitemap))
    content = [path for path in site_pages()
               if path not in {"genindex.html", "search.html", "404.html"}]
    unlisted = [path for path in content if base_url_of_sitemap(listed) + path not in listed]
    assert not unlisted, f"sitemap.xml does not list {unlisted}"


def test_a_missing_page_shows_the_sites_404_from_any_depth(page, traffic):
    """The host answers a missing URL with 404.html, whose absolute links must
    load the site's styles and scripts from any depth."""
    page.goto("no/such/section/page.html")
    errors = [error for error in traffic.console_errors if "status of 404" not in error
              or "no/such/section/page.html" not in error]
    assert not errors and not traffic.foreign_requests, (
        f"404 page: {errors + traffic.foreign_requests}")
    expect(page.locator("h1")).to_have_text("Page not found")
    assert page.evaluate("() => getComputedStyle(document.querySelector('.sidebar-drawer'))"
                         ".display") != "inline", (
        "the 404 page's stylesheets did not load from its absolute links")


@pytest.mark.parametrize("path", ["index.html", TUTORIAL])
def test_pages_work_from_files_with_the_network_off(new_context, path):
    """Opened from _build/html as files, offline: styled, math drawn, no errors."""
    context = new_context(offline=True)
    errors: list[str] = []
    foreign: list[str] = []

    def route(route_):
        if route_.request.url.startswith(("file:", "data:", "blob:")):
            route_.continue_()
        else:
            foreign.append(route_.request.url)
            route_.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((SITE / path).as_uri())
    assert not errors and not foreign, (
        f"errors {errors}, requests {foreign} when opened from a file")
    drawn = page.evaluate("() => document.querySelectorAll('.math mjx-container svg').length")
    total = page.evaluate("() => document.querySelectorAll('.math').length")
    assert drawn == total > 0, f"{drawn} of {total} equations drawn when opened from a file"
    # furo's stylesheet defines its palette as CSS variables: empty if it did not load.
    brand = page.evaluate("() => getComputedStyle(document.body)"
                          ".getPropertyValue('--color-brand-primary').trim()")
    assert brand, "furo's stylesheet did not load from a file (no --color-brand-primary)"

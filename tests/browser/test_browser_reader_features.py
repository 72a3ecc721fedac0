"""What a reader does with the site: search, switch theme, copy code, download, go offline."""

from __future__ import annotations

import json
import re
from urllib.parse import quote_plus

import pytest

from browser_support import ROOT, SITE, Visit, site_pages

TUTORIAL = "tutorial/why-backward-z-gives-z.html"
ERROR_MESSAGES = ROOT / "docs" / "reference" / "error-messages.md"


def search(open_page, query: str) -> tuple[Visit, list[str]]:
    visit = open_page(f"search.html?q={quote_plus(query)}")
    visit.page.wait_for_function(
        "() => /Search finished|did not match/.test("
        "document.querySelector('.search-summary')?.textContent || '')",
        timeout=15_000,
    )
    hits = visit.page.eval_on_selector_all("ul.search li a", "as => as.map(a => a.href)")
    return visit, hits


@pytest.mark.parametrize("query, page", [
    ("vector-Jacobian product", "reference/glossary.html"),
    pytest.param(
        "grad can be implicitly created only for scalar outputs",
        "reference/error-messages.html",
        marks=pytest.mark.skipif(not ERROR_MESSAGES.is_file(),
                                 reason="docs/reference/error-messages.md not written yet"),
    ),
])
def test_search_finds(open_page, query, page):
    visit, hits = search(open_page, query)
    visit.check(any(hit.split("#")[0].split("?")[0].endswith(page) for hit in hits),
                f"search-{query}", f"searching {query!r} does not list {page}; hits: {hits}")
    visit.check(not visit.console_errors, f"search-{query}",
                f"console errors: {visit.console_errors}")


def test_theme_toggle_cycles_and_repaints(open_page):
    visit = open_page(TUTORIAL)
    p = visit.page
    background = "() => getComputedStyle(document.body).backgroundColor"
    seen = {}
    for _ in range(3):
        p.locator(".theme-toggle-header .theme-toggle, .theme-toggle-content .theme-toggle") \
            .locator("visible=true").first.click()
        theme = p.evaluate("() => document.body.dataset.theme")
        seen[theme] = p.evaluate(background)
    visit.check(set(seen) == {"auto", "light", "dark"}, "theme-toggle",
                f"three clicks should visit auto, light and dark; saw {sorted(seen)}")
    visit.check(seen["light"] != seen["dark"], "theme-toggle",
                f"light and dark themes have the same background {seen['light']}")
    remembered = p.evaluate("() => localStorage.getItem('theme')")
    visit.check(remembered == theme, "theme-toggle",
                f"the page shows {theme!r} but remembers {remembered!r} for the next page")


def copied_text(visit: Visit, block) -> str:
    block.hover()
    block.locator("button.copybtn").click()
    visit.page.wait_for_timeout(200)
    text = visit.page.evaluate("() => navigator.clipboard.readText()")
    return text


def test_copy_button_copies_code_only(open_page):
    visit = open_page(TUTORIAL, permissions=["clipboard-read", "clipboard-write"])
    p = visit.page
    notebook = json.loads((SITE / TUTORIAL.replace(".html", ".ipynb")).read_text("utf8"))
    first_shown = next(
        cell for cell in notebook["cells"] if cell["cell_type"] == "code"
        and "remove-cell" not in cell.get("metadata", {}).get("tags", [])
        and "remove-input" not in cell.get("metadata", {}).get("tags", [])
    )
    source = "".join(first_shown["source"]).strip()

    cell = p.locator("div.cell div.cell_input div.highlight").first
    copied = copied_text(visit, cell).strip()
    visit.check(copied == source, "copy-cell",
                f"the copy button on the first code cell copied\n{copied!r}\nnot its code\n{source!r}")

    # A block with prompts and outputs (the doctest): only what a reader types.
    doctest = p.locator("div.highlight:has(.gp)").first
    visit.check(doctest.count() == 1, "copy-doctest", "no block with >>> prompts on the page")
    copied = copied_text(visit, doctest)
    visit.check(">>>" not in copied and "..." not in copied.split("\n")[0], "copy-doctest",
                f"prompts were copied: {copied!r}")
    outputs = [line.strip() for line in p.locator("div.highlight:has(.gp) .go").all_inner_texts()]
    leaked = [line for line in outputs if line and line in copied]
    visit.check(not leaked, "copy-doctest", f"outputs were copied: {leaked} in {copied!r}")
    visit.check(copied.strip() != "", "copy-doctest", "nothing was copied")


def test_executed_page_downloads_as_notebook_and_source(open_page, base_url):
    visit = open_page(TUTORIAL)
    p = visit.page
    notebook_link = p.locator(".download-notebook a")
    visit.check(notebook_link.count() == 1, "download", "no notebook download link")
    href = notebook_link.get_attribute("href")
    response = p.request.get(visit.url.rsplit("/", 1)[0] + "/" + href)
    visit.check(response.ok, "download", f"{href} answers {response.status}")
    notebook = json.loads(response.text())
    outputs = sum(len(c.get("outputs", [])) for c in notebook["cells"] if c["cell_type"] == "code")
    visit.check(outputs > 0, "download", f"{href} has no outputs: not the executed notebook")

    source_link = p.locator(".view-this-page:not(.download-notebook) a").first
    source = p.request.get(source_link.evaluate("a => a.href"))
    visit.check(source.ok and "{code-cell}" in source.text(), "download",
                "the 'view source' link does not serve the page's MyST source")


def base_url_of_sitemap(locs: set[str]) -> str:
    """html_baseurl, as the sitemap spells it: where the landing page lives."""
    index = min((loc for loc in locs if loc.endswith("/index.html")), key=len)
    return index[: -len("index.html")]


def test_metadata_sitemap_and_404(open_page, base_url):
    visit = open_page(TUTORIAL)
    p = visit.page
    og = dict(p.eval_on_selector_all(
        "meta[property^='og:']", "ms => ms.map(m => [m.getAttribute('property'), m.content])"))
    visit.check({"og:title", "og:url", "og:type", "og:description"} <= set(og), "opengraph",
                f"OpenGraph tags missing; found {sorted(og)}")
    sitemap = p.request.get(base_url + "sitemap.xml").text()
    listed = set(re.findall(r"<loc>([^<]*)</loc>", sitemap))
    content = [page for page in site_pages()
               if page not in {"genindex.html", "search.html", "404.html"}]
    unlisted = [page for page in content if base_url_of_sitemap(listed) + page not in listed]
    visit.check(not unlisted, "sitemap", f"sitemap.xml does not list {unlisted}")
    # A missing page, deep in the site: the host answers with 404.html, whose
    # absolute links must load the site's styles and scripts from any depth.
    missing = open_page("no/such/section/page.html")
    errors = [e for e in missing.console_errors if "status of 404" not in e
              or "no/such/section/page.html" not in e]
    missing.check(not errors and not missing.foreign_requests, "404",
                  f"404 page: {errors + missing.foreign_requests}")
    missing.check(missing.page.locator("h1").inner_text().strip() == "Page not found",
                  "404", "a missing URL does not show the site's 404 page")
    missing.check(missing.page.evaluate(
                      "() => getComputedStyle(document.querySelector('.sidebar-drawer')).display")
                  != "inline", "404",
                  "the 404 page's stylesheets did not load from its absolute links")


@pytest.mark.parametrize("page", ["index.html", TUTORIAL])
def test_pages_work_from_files_with_the_network_off(browser, page):
    """Opened from _build/html as files, offline: styled, math drawn, no errors."""
    context = browser.new_context(offline=True)
    errors: list[str] = []
    foreign: list[str] = []
    try:
        def route(route_):
            if route_.request.url.startswith(("file:", "data:", "blob:")):
                route_.continue_()
            else:
                foreign.append(route_.request.url)
                route_.abort()

        context.route("**/*", route)
        p = context.new_page()
        p.on("console", lambda m: m.type == "error" and errors.append(m.text))
        p.on("pageerror", lambda e: errors.append(str(e)))
        url = (SITE / page).as_uri()
        p.goto(url)
        visit = Visit(page=p, url=url)
        visit.check(not errors and not foreign, f"file-{page}",
                    f"errors {errors}, requests {foreign} when opened from a file")
        drawn = p.evaluate("() => document.querySelectorAll('.math mjx-container svg').length")
        total = p.evaluate("() => document.querySelectorAll('.math').length")
        visit.check(drawn == total > 0, f"file-{page}",
                    f"{drawn} of {total} equations drawn when opened from a file")
        styled = p.evaluate("() => getComputedStyle(document.body).fontFamily")
        visit.check("serif" in styled or "sans" in styled.lower(), f"file-{page}",
                    f"the site's styles did not load from a file (font: {styled})")
    finally:
        context.close()


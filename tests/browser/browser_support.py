"""The built site in a real browser: Debian's Chromium, driven by Playwright.

The site in ``_build/html`` (``make html``; ``make test`` builds it first) is served
on a loopback port under the same path it has when hosted (html_baseurl's path, as
written into robots.txt), so the 404 page's absolute links are checked too. Every
request to another origin is recorded and refused: the pages must be complete with
the network off.

Without Chromium these tests are skipped with one line saying how to enable them;
in CI (``CI=true``) that is a failure instead, so CI cannot pass without running them.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "_build" / "html"
FAILURES = ROOT / "_build" / "browser-failures"
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
HOW_TO_ENABLE = (
    "browser tests: Chromium not found; enable them with "
    "`sudo apt-get install chromium` (or CHROMIUM=/path/to/chrome), then `make test`"
)


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


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


def require_site() -> None:
    if not (SITE / "index.html").is_file():
        pytest.fail(f"no built site in {SITE}: run `make html` first "
                    "(`make test` does)", pytrace=False)


def find_chromium() -> str | None:
    """$CHROMIUM if set (e.g. Chrome on a GitHub runner), else Debian's chromium."""
    return (os.environ.get("CHROMIUM") or shutil.which("chromium")
            or shutil.which("chromium-browser"))


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    chromium = find_chromium()
    if chromium is None or not Path(chromium).is_file():
        return HOW_TO_ENABLE
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "browser tests: Playwright missing; `make test` installs it"
    return None


def require_browser() -> str:
    missing = browser_missing()
    if missing:
        if in_ci():
            pytest.fail(f"CI must run the browser tests, but: {missing}", pytrace=False)
        pytest.skip(missing)
    return find_chromium()


class _SiteHandler(http.server.SimpleHTTPRequestHandler):
    prefix = "/"

    def translate_path(self, path: str) -> str:
        clean = path.split("?", 1)[0].split("#", 1)[0]
        if not clean.startswith(self.prefix):
            return str(SITE / "__outside_the_site__")
        return super().translate_path("/" + clean[len(self.prefix):])

    def send_error(self, code, message=None, explain=None):
        """A missing page gets the site's 404.html, as Read the Docs and Pages serve it."""
        not_found = SITE / "404.html"
        if code != 404 or not not_found.is_file():
            return super().send_error(code, message, explain)
        body = not_found.read_bytes()
        self.send_response(404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, *args) -> None:  # keep the test log for failures
        pass


@pytest.fixture(scope="session")
def base_url() -> str:
    require_site()
    prefix = site_prefix()
    handler = type("Handler", (_SiteHandler,), {"prefix": prefix})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(SITE))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}{prefix}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser():
    chromium = require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@dataclass
class Visit:
    """A page opened in a fresh context, with what it logged and fetched."""

    page: object
    url: str
    console_errors: list[str] = field(default_factory=list)
    foreign_requests: list[str] = field(default_factory=list)

    def fail(self, name: str, message: str) -> None:
        """Fail the test, saving a screenshot for the reader of the log."""
        FAILURES.mkdir(parents=True, exist_ok=True)
        path = FAILURES / (re.sub(r"[^A-Za-z0-9_.-]+", "_", name) + ".png")
        try:
            self.page.screenshot(path=str(path), full_page=True)
            where = f"screenshot: {path.relative_to(ROOT)}"
        except Exception as error:  # the page may be gone; say so
            where = f"no screenshot ({error})"
        pytest.fail(f"{message}\n  page: {self.url}\n  {where}", pytrace=False)

    def check(self, condition: bool, name: str, message: str) -> None:
        if not condition:
            self.fail(name, message)


@pytest.fixture
def open_page(browser, base_url):
    """``open_page(path, width=1280, theme="light", **context_options)`` -> Visit."""
    contexts = []

    def open_(path: str, width: int = 1280, theme: str = "light", **options) -> Visit:
        context = browser.new_context(
            viewport={"width": width, "height": 900}, color_scheme=theme,
            service_workers="block", **options,
        )
        contexts.append(context)
        page = context.new_page()
        visit = Visit(page=page, url=base_url + path)
        origin = urlparse(base_url)

        def route(route_):
            url = urlparse(route_.request.url)
            if url.scheme in {"data", "blob"} or (url.scheme, url.netloc) == (
                origin.scheme, origin.netloc
            ):
                route_.continue_()
            else:
                visit.foreign_requests.append(route_.request.url)
                route_.abort()

        context.route("**/*", route)
        page.on("console", lambda msg: msg.type == "error"
                and visit.console_errors.append(f"{msg.text} ({msg.location.get('url')})"))
        page.on("pageerror", lambda error: visit.console_errors.append(f"uncaught: {error}"))
        page.goto(visit.url, wait_until="load")
        # site.css lets the browser skip laying out sections far off screen; the
        # checks below measure and audit every section, so lay them all out.
        page.add_style_tag(content="article section { content-visibility: visible !important; }")
        if theme == "dark":
            # Furo follows the system's scheme ("auto"); pin it as the toggle would.
            page.evaluate("document.body.dataset.theme = 'dark'")
        return visit

    yield open_
    for context in contexts:
        context.close()

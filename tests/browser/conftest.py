"""The built site in a real browser: Debian's Chromium, driven by pytest-playwright.

The site in ``_build/html`` (``make html``; ``make test`` builds it first) is served
on a loopback port under the path it has when hosted (html_baseurl's path, as
written into robots.txt), so the 404 page's absolute links are checked too. The
plugin's ``page`` and ``context`` fixtures open it; the browser reaches no host
but the site's, and ``traffic`` records every request to another origin and
every console error: the pages must be complete with the network off. A failing test leaves a full-page screenshot of
each page it had open in ``_build/browser-failures/`` and names them in its
report (``pytest_runtest_makereport`` below).

Without Chromium the tests are skipped (one line, thanks to -ra); in CI
(``CI=true``) that is a failure instead, so CI cannot pass without running them.
``CHROMIUM=/path/to/chrome`` picks another Chromium-family browser.
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
from built_site import DESKTOP, ROOT, SITE, site_prefix
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect

FAILURES = ROOT / "_build" / "browser-failures"

# How long an `expect` waits for what it checks. Playwright's 5 s failed CI
# once under its load (stop 61: the :target of a 0.5 MB page, set in 0.4-0.7 s
# here under 12 busy loops). A check that holds returns as soon as it does.
expect.set_options(timeout=15_000)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failing test's pages, each as a full-page screenshot, taken while they are
    still open. Not pytest-playwright's --screenshot=only-on-failure: that takes
    the screenshots of every test as its windows close and deletes a passing
    test's, a fifth of these tests' time."""
    report = yield
    browser = item.funcargs.get("browser") if report.when == "call" and report.failed else None
    if browser is not None:
        folder = FAILURES / re.sub(r"[^\w.-]+", "-", item.nodeid).strip("-")
        saved = []
        for index, page in enumerate([page for context in browser.contexts
                                      for page in context.pages], 1):
            try:
                page.screenshot(path=folder / f"page-{index}.png", full_page=True, timeout=5000)
                saved.append(str(folder / f"page-{index}.png"))
            except PlaywrightError as error:  # a page that crashed, say
                saved.append(f"page {index} ({page.url}): no screenshot, {error.message}")
        report.sections.append(("screenshots of the pages open", "\n".join(saved)))
    return report


# Debian's Chromium in a container: no sandbox, no GPU, nothing fetched in the
# background, and no host but the loopback address the site is served on: a
# request to another origin fails in the browser (``watch`` records it). Not
# Playwright's request routing: a round trip to this process for every request,
# with the browser's cache off, was a quarter of the browser tests' CPU (bench/README.md).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]


def find_chromium() -> str | None:
    """$CHROMIUM if set (e.g. Chrome on a GitHub runner), else Debian's chromium."""
    return os.environ.get("CHROMIUM") or shutil.which("chromium")


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    chromium = find_chromium()
    if chromium is None or not Path(chromium).is_file():
        missing = ("browser tests: Chromium not found; enable them with "
                   "`sudo apt-get install chromium` (or CHROMIUM=/path/to/chrome)")
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(f"CI must run the browser tests, but: {missing}", pytrace=False)
        pytest.skip(missing)
    return {**browser_type_launch_args, "executable_path": chromium, "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": DESKTOP, "color_scheme": "light",
            "service_workers": "block"}


# How many windows a test that waits on the browser (a scroll coming to rest)
# drives at once. Measured on 2 cores when every phone-width heading link was
# followed with furo's smooth scroll: 243 s in one window, 124 s in 4, 102 s in 8.
WINDOWS = 8


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
    """The built site, served on a port the OS picks; pages open relative to it."""
    if not (SITE / "index.html").is_file():
        pytest.fail(f"no built site in {SITE}: run `make html` first (`make test` does)",
                    pytrace=False)
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


@dataclass
class Traffic:
    """What the pages of one test's context logged and tried to fetch."""

    console_errors: list[str] = field(default_factory=list)
    foreign_requests: list[str] = field(default_factory=list)


def watch(context, base_url: str, seen: Traffic) -> None:
    """Record in ``seen`` each request ``context`` makes to another origin, and its
    console errors. The browser resolves no host but the site's (``CHROMIUM_ARGS``),
    so such a request fails, and its failure is what is recorded (requests that
    succeed cost this process nothing). The one origin a page could still reach
    is another port of the site's address, which nothing the site writes can name:
    the port is picked when the test starts."""
    origin = urlparse(base_url)

    def failed(request):
        url = urlparse(request.url)
        if url.scheme not in {"data", "blob"} and (url.scheme, url.netloc) != (
                origin.scheme, origin.netloc):
            seen.foreign_requests.append(request.url)

    context.on("requestfailed", failed)
    context.on("console", lambda msg: msg.type == "error" and seen.console_errors.append(
        f"{msg.text} ({msg.location.get('url')})"))
    context.on("weberror", lambda error: seen.console_errors.append(
        f"uncaught: {error.error}"))


@pytest.fixture
def traffic(context, base_url) -> Traffic:
    """What the test's page tried to fetch elsewhere (refused) and its console errors."""
    seen = Traffic()
    watch(context, base_url, seen)
    return seen


@pytest.fixture
def motion() -> str:
    """What the reader asked of the system (CSS prefers-reduced-motion): "reduce"
    or "no-preference"; a test parametrized on ``motion`` picks it."""
    return "no-preference"


@pytest.fixture
def windows(new_context, base_url, motion) -> tuple[list, Traffic]:
    """WINDOWS pages, each in a browser window (context) of its own asking for
    ``motion``, and what they fetched elsewhere or logged. Windows, not tabs: a
    tab behind another gets no animation frames, so a smooth scroll there would
    never come to rest."""
    seen = Traffic()
    pages = []
    for _ in range(WINDOWS):
        context = new_context(reduced_motion=motion)
        watch(context, base_url, seen)
        pages.append(context.new_page())
    return pages, seen

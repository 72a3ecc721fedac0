"""404.html works wherever the site is served: at the root, under the hosted path
(html_baseurl's, e.g. ``/en/latest/``), under another (a GitHub Pages project's
``/name/``), and for a missing page at any depth. Its stylesheets and scripts
load, and its links lead to pages that exist (conf.py writes them relative to
the site's root; its first script finds that root in the address)."""

from __future__ import annotations

import functools
import http.server
import threading

import pytest
from built_site import SITE, site_prefix
from conftest import _SiteHandler

pytestmark = [pytest.mark.browser, pytest.mark.build]


def serve(prefix: str):
    handler = type("Handler", (_SiteHandler,), {"prefix": prefix})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(SITE)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize("prefix", sorted({"/", "/autograd-explained/", site_prefix()}))
@pytest.mark.parametrize("missing", ["no-such-page.html", "tutorial/no-such-page.html",
                                     "how-to/gone/deeper/page"])
def test_the_404_page_is_styled_and_its_links_land(page, prefix, missing):
    server = serve(prefix)
    root = f"http://127.0.0.1:{server.server_port}{prefix}"
    failed = []
    page.on("response", lambda r: r.status >= 400 and r.url != root + missing
            and failed.append(f"{r.status} {r.url}"))
    page.on("requestfailed", lambda r: failed.append(f"failed {r.url}"))
    try:
        response = page.goto(root + missing, wait_until="load")
        assert response.status == 404
        assert page.locator("h1").first.text_content().strip() == "Page not found"
        # furo's stylesheet is applied: its sidebar is laid out beside the text.
        assert page.evaluate("getComputedStyle(document.body).getPropertyValue("
                             "'--color-brand-primary')").strip(), "furo.css did not load"
        assert not failed, failed
        hrefs = page.eval_on_selector_all(
            "article a[href], .sidebar-tree a[href]", "as => as.map(a => a.href)")
        assert len(hrefs) > 10, hrefs
        for href in sorted(set(h.split("#")[0] for h in hrefs if h.startswith(root))):
            assert (SITE / href.removeprefix(root)).is_file() or href == root, (
                f"{href} from {root + missing} leads nowhere")
        assert all(h.startswith(root) or not h.startswith("http://127.0.0.1") for h in hrefs)
    finally:
        server.shutdown()
        server.server_close()

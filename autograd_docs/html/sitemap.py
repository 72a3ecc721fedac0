"""sitemap.xml and robots.txt, written from the whole project on every build.

**sitemap.xml** lists every page at ``html_baseurl``. sphinx-sitemap would list
only the pages the last build wrote, so an incremental build would leave it
short (jdillard/sphinx-sitemap#13, open since 2018); when that is fixed, this
file can go.

**robots.txt** points crawlers to the sitemap at ``html_baseurl`` (it counts where
the site is served at a domain's root).
"""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import escape

from sphinx.application import Sphinx

# Pages that are not content: no search engine should index them.
NOT_IN_SITEMAP = {"genindex", "search", "404"}


def _write_sitemap(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html" or not app.config.html_baseurl:
        return
    base = app.config.html_baseurl.rstrip("/") + "/"
    urls = [
        f"  <url><loc>{escape(base + app.builder.get_target_uri(docname))}</loc></url>"
        for docname in sorted(app.env.found_docs)
        if docname not in NOT_IN_SITEMAP
    ]
    (Path(app.outdir) / "sitemap.xml").write_text(
        '<?xml version="1.0" encoding="utf-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        + "\n".join(urls)
        + "\n</urlset>\n",
        encoding="utf8",
    )


def _write_robots_txt(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    lines = ["User-agent: *", "Allow: /"]
    if app.config.html_baseurl:
        lines.append(f"Sitemap: {app.config.html_baseurl.rstrip('/')}/sitemap.xml")
    (Path(app.outdir) / "robots.txt").write_text("\n".join(lines) + "\n", encoding="utf8")


def setup(app: Sphinx) -> dict:
    app.connect("build-finished", _write_sitemap)
    app.connect("build-finished", _write_robots_txt)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

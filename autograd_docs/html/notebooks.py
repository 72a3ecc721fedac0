"""What the built site offers readers beyond its pages: notebooks, sitemap, robots.txt.

**Notebooks.** Every executed page can be downloaded as the notebook that ran at
build time.
myst-nb writes each page's notebook to ``<builddir>/jupyter_execute``, but when the
outputs come from its cache it writes the notebook it read, without them. This
extension puts the outputs back before that write, copies those notebooks into the site beside their pages
(``tutorial/page.html`` gets ``tutorial/page.ipynb``) and gives the page template a
``notebook_download`` link, shown next to furo's "view source" button
(docs/_templates/components/view-this-page.html).

**sitemap.xml** lists every page at ``html_baseurl``. It is written from the
whole project on every build (sphinx-sitemap lists only the pages the last build
wrote, so an incremental build would leave it short).

**robots.txt** points crawlers to the sitemap at ``html_baseurl`` (it counts where
the site is served at a domain's root).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from xml.sax.saxutils import escape

import myst_nb.sphinx_
from sphinx.application import Sphinx

OUTPUT_FOLDER = "jupyter_execute"  # myst_nb.sphinx_ext.OUTPUT_FOLDER


def _executed_notebook(app: Sphinx, docname: str) -> Path:
    return Path(app.outdir).parent / OUTPUT_FOLDER / f"{docname}.ipynb"


def _add_link(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if doctree is not None and _executed_notebook(app, pagename).is_file():
        context["notebook_download"] = context["pathto"](f"{pagename}.ipynb", 1)


def _copy_notebooks(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for docname in sorted(app.env.found_docs):
        notebook = _executed_notebook(app, docname)
        if notebook.is_file():
            target = Path(app.outdir) / f"{docname}.ipynb"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(notebook, target)


class _OutputsBack:
    """Wrap myst-nb's execution client; on exit, copy outputs into the notebook read."""

    def __init__(self, client, notebook):
        self._client, self._notebook, self._entered = client, notebook, None

    def __enter__(self):
        self._entered = self._client.__enter__()
        return self._entered

    def __exit__(self, *exc_info):
        result = self._client.__exit__(*exc_info)
        executed = getattr(self._entered, "notebook", None)
        if executed is not None and executed is not self._notebook and (
            len(executed.cells) == len(self._notebook.cells)
        ):
            for read, ran in zip(self._notebook.cells, executed.cells):
                if read.cell_type == "code" and ran.cell_type == "code":
                    read.outputs = ran.outputs
                    read.execution_count = ran.execution_count
            for key in ("kernelspec", "language_info"):
                if key in executed.metadata:
                    self._notebook.metadata[key] = executed.metadata[key]
        return result


def _keeping_outputs(original):
    def create_client(notebook, *args, **kwargs):
        return _OutputsBack(original(notebook, *args, **kwargs), notebook)

    return create_client


# Pages that are not content: no search engine should index them.
NOT_IN_SITEMAP = {"genindex", "search", "404"}


def _write_sitemap(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html" or not app.config.html_baseurl:
        return
    base = app.config.html_baseurl.rstrip("/") + "/"
    urls = [f"  <url><loc>{escape(base + app.builder.get_target_uri(docname))}</loc></url>"
            for docname in sorted(app.env.found_docs) if docname not in NOT_IN_SITEMAP]
    (Path(app.outdir) / "sitemap.xml").write_text(
        '<?xml version="1.0" encoding="utf-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        + "\n".join(urls) + "\n</urlset>\n", encoding="utf8")


def _write_robots_txt(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    lines = ["User-agent: *", "Allow: /"]
    if app.config.html_baseurl:
        lines.append(f"Sitemap: {app.config.html_baseurl.rstrip('/')}/sitemap.xml")
    (Path(app.outdir) / "robots.txt").write_text("\n".join(lines) + "\n", encoding="utf8")


def setup(app: Sphinx) -> dict:
    myst_nb.sphinx_.create_client = _keeping_outputs(myst_nb.sphinx_.create_client)
    app.connect("html-page-context", _add_link)
    app.connect("build-finished", _copy_notebooks)
    app.connect("build-finished", _write_sitemap)
    app.connect("build-finished", _write_robots_txt)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

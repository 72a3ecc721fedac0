"""Every executed page can be downloaded as the notebook that ran at build time.

myst-nb writes each page's notebook to ``<builddir>/jupyter_execute`` (with its
outputs, also on a cache hit: ``autograd_docs.execution`` sees to that). This
extension copies those notebooks into the site beside their pages
(``tutorial/page.html`` gets ``tutorial/page.ipynb``) and gives the page template a
``notebook_download`` link, shown next to furo's "view source" button
(docs/_templates/components/view-this-page.html).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.application import Sphinx

from autograd_docs._compat import OUTPUT_FOLDER


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


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", _add_link)
    app.connect("build-finished", _copy_notebooks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

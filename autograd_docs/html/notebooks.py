"""Every executed page can be downloaded as a notebook that runs where readers run it.

myst-nb writes each page's notebook to ``<builddir>/jupyter_execute`` (with its
outputs, also on a cache hit: ``autograd_docs.execution`` sees to that). This
extension copies those notebooks into the site beside their pages
(``tutorial/page.html`` gets ``tutorial/page.ipynb``) and gives the page template a
``notebook_download`` link, shown next to furo's "view source" button
(docs/_templates/components/view-this-page.html).

A reader's Jupyter runs in an empty folder with no ``snippets/`` on its path, so
the copy leaves out the cells a page hides with ``remove-cell`` (the build's
oracle checks), and writes every snippet the remaining cells import beside the
notebook, in a ``%%writefile`` cell at the top the reader can read first.
"""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat
from sphinx.application import Sphinx

from autograd_docs._compat import OUTPUT_FOLDER
from autograd_docs.execution.cache_key import snippets_imported
from autograd_docs.execution.checks import HIDDEN_CHECK  # the tag of the build's own checks


def reader_notebook(executed: nbformat.NotebookNode, snippets_dir: Path) -> nbformat.NotebookNode:
    """A copy of ``executed`` that runs top to bottom outside this repository."""
    notebook = copy.deepcopy(executed)
    notebook.cells = [cell for cell in notebook.cells
                      if HIDDEN_CHECK not in cell.metadata.get("tags", [])]
    notebook.metadata.pop("source_map", None)  # line numbers of the build's source
    code = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    snippets = snippets_imported(code, snippets_dir)
    if snippets:
        names = ", ".join(f"`{path.name}`" for path in snippets)
        preface = [nbformat.v4.new_markdown_cell(
            f"This page imports the site's own helpers ({names}). The next "
            f"{'cell writes it' if len(snippets) == 1 else 'cells write them'} "
            "beside this notebook, so it runs in any folder.")]
        preface += [nbformat.v4.new_code_cell(
            f"%%writefile {path.name}\n{path.read_text(encoding='utf8')}")
            for path in snippets]
        notebook.cells = preface + notebook.cells
    for index, cell in enumerate(notebook.cells):
        cell["id"] = f"cell-{index}"  # stable ids: the same bytes on every build
    return notebook


def _executed_notebook(app: Sphinx, docname: str) -> Path:
    return Path(app.outdir).parent / OUTPUT_FOLDER / f"{docname}.ipynb"


def _add_link(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    if doctree is not None and _executed_notebook(app, pagename).is_file():
        context["notebook_download"] = context["pathto"](f"{pagename}.ipynb", 1)


def _copy_notebooks(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    snippets_dir = Path(app.config.autograd_docs_snippets_dir)
    # A download is written again only when something it is made of is newer:
    # the executed notebook, a snippet it may inline, or this code.
    inputs = max((path.stat().st_mtime for path in [Path(__file__),
                                                    *snippets_dir.glob("*.py")]),
                 default=0)
    for docname in sorted(app.env.found_docs):
        notebook = _executed_notebook(app, docname)
        if not notebook.is_file():
            continue
        target = Path(app.outdir) / f"{docname}.ipynb"
        if target.is_file() and target.stat().st_mtime >= max(
                inputs, notebook.stat().st_mtime):
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        executed = nbformat.read(notebook, as_version=4)
        nbformat.write(reader_notebook(executed, snippets_dir), target)


def setup(app: Sphinx) -> dict:
    app.connect("html-page-context", _add_link)
    app.connect("build-finished", _copy_notebooks)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

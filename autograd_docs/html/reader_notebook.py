"""The notebook a reader downloads: the page as it ran, without the build's own checks.

A reader's Jupyter runs in an empty folder with no ``snippets/`` on its path. So
the cells the page hides with ``remove-cell`` (the build's oracle checks) are left
out, and every snippet the remaining cells import is written beside the notebook
by a ``%%writefile`` cell at the top, which the reader can read before running it.
"""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat

from autograd_docs.execution import snippets_imported

HIDDEN_CHECK = "remove-cell"


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

"""What every page's code must not do, read from the sources without a build."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from IPython.core.inputtransformer2 import TransformerManager
from myst_nb.core.read import read_myst_markdown_notebook

from autograd_docs.code_cells import code_cells

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").rglob("*.md"))


def top_level_names_bound(source: str) -> set[str]:
    """Names a cell binds in the page's namespace (not in functions, classes or comprehensions)."""
    tree = ast.parse(TransformerManager().transform_cell(source))
    bound, pending = set(), list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda,
                             ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        pending.extend(ast.iter_child_nodes(node))
    return bound


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT / "docs")))
def test_no_cell_assigns_the_last_output(page):
    """IPython stops updating ``_`` once a cell assigns it, and hidden checks read ``_``:
    a ``for _ in`` or ``_, b = ...`` at a page's top level would let them pass on a
    stale value."""
    offenders = [cell.source.splitlines()[0]
                 for cell in code_cells(page.read_text(encoding="utf8"))
                 if "_" in top_level_names_bound(cell.source)]
    assert not offenders, f"{page.relative_to(ROOT)}: a cell binds `_`: {offenders}"


ANSWER_PROMPTS = {"code_prompt_show": "Show the answer", "code_prompt_hide": "Hide the answer"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT / "docs")))
def test_a_hidden_answer_says_show_the_answer(page):
    """The code behind a "Check yourself" exercise opens with "Show the answer", not
    myst-nb's "Show code cell content" (readers take that for setup code)."""
    notebook = read_myst_markdown_notebook(page.read_text(encoding="utf8"))
    section, offenders = "", []
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            headings = [line for line in cell.source.splitlines() if line.startswith("## ")]
            section = headings[-1] if headings else section
        elif ("Check yourself" in section and "hide-cell" in cell.metadata.get("tags", [])
              and cell.metadata.get("mystnb", {}) != ANSWER_PROMPTS):
            offenders.append(cell.source.splitlines()[0])
    assert not offenders, f"{page.relative_to(ROOT)}: answers without the prompts: {offenders}"

"""A MyST page's code cells, as myst-nb reads them: the one reader of them.

The build (``reading_order``), the tools (``make mutants``), ``make bench`` and
the tests all take a page's code cells from ``code_cells``, which is myst-nb's
own reader (``read_myst_markdown_notebook``, the function that turns the page
into the notebook the build executes), so they agree with the build on which
fences are cells (nested ones are not), what their options are and where
their code starts. What myst-nb's notebook does not say, the line of a cell's
first line of code, is found in the text after the opening fence line that
myst-nb records (``source_map``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from myst_nb.core.read import read_myst_markdown_notebook
from nbformat import NotebookNode


@dataclass(frozen=True)
class CodeCell:
    """One ``{code-cell}`` of a page; lines count from 1, as an editor's do."""

    fence_line: int  # the opening fence
    body_line: int  # the cell's first line of code (past its options)
    source: str  # the code, as the kernel runs it
    options: dict = field(default_factory=dict)  # ":tags: [...]" and the like

    @property
    def tags(self) -> tuple[str, ...]:
        return tuple(self.options.get("tags", []))


def code_cells(
    text: str, path: Path | str | None = None, notebook: NotebookNode | None = None
) -> list[CodeCell]:
    """Every code cell of the MyST page ``text``, in order (``path``: the page's
    file, for a cell that loads its code with ``:load:``). ``notebook``: what
    myst-nb already read ``text`` as, with its source map (the build's
    ``_compat.page_notebook``), so as not to read it again."""
    if notebook is None:
        notebook = read_myst_markdown_notebook(text, add_source_map=True, path=path)
    lines = text.splitlines()
    cells = []
    for cell, fence_line in zip(notebook.cells, notebook.metadata["source_map"]):
        if cell.cell_type != "code":
            continue
        cells.append(
            CodeCell(
                fence_line,
                _body_line(lines, fence_line, cell.source),
                cell.source,
                dict(cell.metadata),
            )
        )
    return cells


def _body_line(lines: list[str], fence_line: int, source: str) -> int:
    """Where ``source`` starts after the fence: the options come first."""
    if not source:
        return fence_line + 1
    body = source.split("\n")
    for start in range(fence_line, len(lines)):  # ``fence_line`` counts from 1
        if lines[start : start + len(body)] == body:
            return start + 1
    return fence_line + 1  # code loaded from a file (``:load:``)

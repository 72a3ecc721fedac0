"""The edits `make bench` makes to a page: where myst-nb says its code starts."""

from __future__ import annotations

from pathlib import Path

from autograd_docs.code_cells import code_cells


def insert_line(text: str, line: int, new: str) -> str:
    """``text`` with ``new`` inserted as its line ``line`` (counting from 1)."""
    lines = text.splitlines(keepends=True)
    return "".join(lines[:line - 1] + [new + "\n"] + lines[line - 1:])


def add_to_first_cell(text: str, line: str) -> str:
    """The page's text with ``line`` added at the top of its first code cell's code."""
    return insert_line(text, code_cells(text)[0].body_line, line)


def edit_code_cell(page: Path, mark: str) -> None:
    """Add a comment to the page's first code cell: its code changes, its output not."""
    page.write_text(add_to_first_cell(page.read_text(), f"# {mark}"))


def add_print_to_first_visible_cell(text: str, marker: str) -> str:
    """The page's text with ``print(marker, n)`` at the top of its first code cell
    not tagged remove-cell: what that cell prints changes. The printed text
    (``marker n``) is not in the highlighted source, which keeps the quotes."""
    cell = next(cell for cell in code_cells(text) if "remove-cell" not in cell.tags)
    name, n = marker.rsplit(" ", 1)
    return insert_line(text, cell.body_line, f"print({name!r}, {n})")

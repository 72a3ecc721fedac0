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


PROPERTY_TIMER = '''

# make bench: the seconds each property check takes, one line per check (the
# outermost, when one runs inside another), appended to {log!r}.
import time as _bench_time  # noqa: E402

_bench_timed_check_property, _bench_depth = check_property, 0


def check_property(*args, **kwargs):
    global _bench_depth
    start, _bench_depth = _bench_time.perf_counter(), _bench_depth + 1
    try:
        return _bench_timed_check_property(*args, **kwargs)
    finally:
        _bench_depth -= 1
        if not _bench_depth:
            with open({log!r}, "a") as seconds:
                seconds.write(f"{{_bench_time.perf_counter() - start}}\\n")
'''


def time_property_checks(oracle: Path, log: Path) -> str:
    """Make the copy's ``check_property`` log the seconds each check takes to
    ``log`` (one line per check); return oracle.py's text, to put back."""
    original = oracle.read_text()
    oracle.write_text(original + PROPERTY_TIMER.format(log=str(log)))
    return original

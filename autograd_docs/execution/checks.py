"""What an executed page's cells did wrong, each reported in one line.

myst-nb's own report of a failing page is a traceback dump (the traceback still
goes to ``_build/html/reports``). Here each problem is one ``AuthorError`` at the
line of the cell's opening fence: a cell that raised, a claim that no longer
holds, a cell that ran out of time, a ``raises-exception`` cell that no longer
raises.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx

from autograd_docs.diagnostics import AuthorError, report, shown_path

ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


HIDDEN_CHECK = "remove-cell"
CLAIM_PREFIX = "claim no longer holds:"  # how oracle.ClaimFailed begins


def check_executed(app: Sphinx, client) -> None:
    """Report what went wrong in the page ``client`` executed (or took from cache)."""
    _report_failed_cell(app, client)
    _check_expected_exceptions(client)


def _check_expected_exceptions(client) -> None:
    """A cell tagged ``raises-exception`` that ran without raising is an error."""
    if not client.exec_metadata or client.exec_metadata.get("error"):
        return  # not executed here, or already failed: reported on its own
    for index, cell in enumerate(client.notebook.cells):
        tags = cell.get("metadata", {}).get("tags", [])
        if cell.cell_type != "code" or "raises-exception" not in tags:
            continue
        if not any(out.get("output_type") == "error" for out in cell.outputs):
            report(AuthorError.STOPPED_RAISING, _cell_location(client, index))


def _report_failed_cell(app: Sphinx, client) -> None:
    """One line for the cell that stopped the page: where, what, what to do."""
    error = (client.exec_metadata or {}).get("error")
    if not error:
        return
    cells = client.notebook.cells
    # Where myst-nb writes the page's traceback (myst_nb/sphinx_.py).
    docname = Path(client.path).relative_to(app.srcdir).with_suffix("").as_posix()
    report_file = Path(app.outdir, "reports", f"{docname}.err.log")
    traceback = f" (full traceback: {shown_path(report_file)})"
    if error == "CellTimeoutError":
        # The cell that timed out is the last one the kernel started (it numbers
        # a cell when it starts it), or the first if it never started one.
        started = [
            i
            for i, cell in enumerate(cells)
            if cell.cell_type == "code" and cell.get("execution_count")
        ]
        code = [i for i, cell in enumerate(cells) if cell.cell_type == "code"]
        index = started[-1] if started else (code[0] if code else None)
        timeout = client.notebook.metadata.get("execution", {}).get(
            "timeout", client.nb_config.execution_timeout
        )
        report(
            AuthorError.CELL_TIMEOUT,
            _cell_location(client, index),
            extra=traceback,
            timeout=timeout,
        )
        return
    no_cell: tuple[None, dict[str, Any]] = (None, {})  # no cell shows the error
    index, failure = next(
        (
            (i, out)
            for i, cell in enumerate(cells)
            if cell.cell_type == "code"
            for out in cell.get("outputs", [])
            if out.get("output_type") == "error"
            and "raises-exception" not in cell.get("metadata", {}).get("tags", [])
        ),
        no_cell,
    )
    name = failure.get("ename", error)
    value = "; ".join(
        line.strip()
        for line in ANSI_ESCAPE.sub("", failure.get("evalue", "")).splitlines()
        if line.strip()
    )
    # A hidden check that fails a plain ``assert`` states a claim as much as one
    # that raises oracle.ClaimFailed: report both the same way.
    hidden_check = index is not None and HIDDEN_CHECK in cells[index].get("metadata", {}).get(
        "tags", []
    )
    if name == "ClaimFailed" or (name == "AssertionError" and hidden_check):
        if not value.startswith(CLAIM_PREFIX):
            value = f"{CLAIM_PREFIX} {value or 'an assert with no message'}"
        report(
            AuthorError.CLAIM_FAILED, _cell_location(client, index), extra=traceback, value=value
        )
    else:
        report(
            AuthorError.CELL_RAISED,
            _cell_location(client, index),
            extra=traceback,
            name=name,
            value=value,
        )


def _cell_location(client, index: int | None) -> str:
    """``path:line`` of a cell's opening fence (just the path if unknown)."""
    path = shown_path(client.path)
    source_map = client.notebook.metadata.get("source_map", [])
    if index is None or index >= len(source_map):
        return path
    return f"{path}:{source_map[index]}"

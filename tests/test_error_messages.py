"""Every error on the error messages page still raises, with the words in its heading.

The page (docs/reference/error-messages.md) raises each error live at build time,
and its headings quote the messages so readers can search for them. This test
reads the page the way myst-nb does and the notebook the last `make html` executed
from it (the build ran every cell against the installed torch: running them again
here would test the same thing twice), and checks each entry: the cells tagged
``raises-exception`` must have raised, with a message that contains the entry's heading.
The one warning entry has no raising cell; its printed output must contain the
heading instead. So a PyTorch release that rewords a message fails CI, naming
the entry.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from myst_nb.core.read import read_myst_markdown_notebook

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "reference" / "error-messages.md"

# An entry starts at a label such as "(error-mismatch-in-shape)=" followed by its
# "## heading"; any other "## " heading (Summary, Check yourself) ends it.
LABEL = re.compile(r"^\((?P<label>(?:error|warning)-[a-z0-9-]+)\)=[ \t]*$", re.MULTILINE)
HEADING = re.compile(r"^##[ \t]+(?P<text>.+?)[ \t]*$", re.MULTILINE)
RAISES = "raises-exception"


@dataclass
class Entry:
    label: str
    heading: str  # the heading's text: part of the message, as the reader sees it
    cells: list[int] = field(default_factory=list)  # indices of its code cells


@dataclass
class CellRun:
    source: str
    tags: list[str]
    error: str | None  # "Type: message", as the page shows it
    output: str


def read_page():
    """The page's code cells and its entries, as myst-nb reads them."""
    notebook = read_myst_markdown_notebook(PAGE.read_text(encoding="utf8"))
    code_cells, entries, current = [], [], None
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            for heading in HEADING.finditer(cell.source):
                before = cell.source[: heading.start()].rstrip().splitlines()
                label = LABEL.fullmatch(before[-1]) if before else None
                if label:
                    text = heading["text"].replace("`", "")
                    current = Entry(label["label"], text)
                    entries.append(current)
                else:
                    current = None
        elif cell.cell_type == "code":
            code_cells.append(cell)
            if current is not None:
                current.cells.append(len(code_cells) - 1)
    return code_cells, entries


CODE_CELLS, ENTRIES = read_page()


@pytest.fixture(scope="module")
def runs(real_build) -> list[CellRun]:
    """Each code cell of the page as the last build executed it, in order."""
    executed = real_build / "jupyter_execute" / "reference" / "error-messages.ipynb"
    if not executed.is_file():
        pytest.fail(f"no {executed.relative_to(ROOT)}: run `make html` first", pytrace=False)
    cells = [cell for cell in json.loads(executed.read_text(encoding="utf8"))["cells"]
             if cell["cell_type"] == "code"]
    sources = [cell.source for cell in CODE_CELLS]
    if ["".join(cell["source"]) for cell in cells] != sources:
        pytest.fail(f"{executed.relative_to(ROOT)} was executed from another version of "
                    f"{PAGE.relative_to(ROOT)}: run `make html`", pytrace=False)
    results = []
    for cell, source in zip(cells, sources):
        outputs = cell.get("outputs", [])
        error = next((f"{out['ename']}: {out['evalue']}" for out in outputs
                      if out["output_type"] == "error"), None)
        printed = "".join("".join(out["text"]) if out["output_type"] == "stream"
                          else "".join(out.get("data", {}).get("text/plain", ""))
                          for out in outputs if out["output_type"] != "error")
        results.append(CellRun(source, list(cell["metadata"].get("tags", [])), error, printed))
    return results


def test_page_has_the_entries_it_promises():
    assert len(ENTRIES) >= 10, f"expected at least 10 entries, found {len(ENTRIES)}"
    labels = [entry.label for entry in ENTRIES]
    assert len(labels) == len(set(labels)), f"duplicate labels: {labels}"
    in_entries = {index for entry in ENTRIES for index in entry.cells}
    for index, cell in enumerate(CODE_CELLS):
        if RAISES in cell.metadata.get("tags", []):
            assert index in in_entries, (
                f"code cell {index} is tagged {RAISES} but sits under no labelled entry:\n"
                f"{cell.source}"
            )


@pytest.mark.parametrize("entry", ENTRIES, ids=[entry.label for entry in ENTRIES])
def test_entry_raises_its_heading(entry: Entry, runs: list[CellRun]):
    where = f"entry ({entry.label}) {entry.heading!r} in {PAGE.relative_to(ROOT)}"
    cells = [runs[index] for index in entry.cells]
    raising = [run for run in cells if RAISES in run.tags]
    for run in cells:
        if RAISES in run.tags:
            assert run.error is not None, (
                f"{where}: this cell no longer raises:\n{run.source}"
            )
            assert entry.heading in run.error, (
                f"{where}: the message no longer contains the heading.\n"
                f"  PyTorch raised: {run.error}"
            )
        else:
            assert run.error is None, (
                f"{where}: a cell meant to work raised {run.error}\n{run.source}"
            )
    if not raising:  # a warning entry: its printed text carries the heading
        printed = "".join(run.output for run in cells)
        assert entry.heading in printed, (
            f"{where}: no cell raises and none printed the heading's words; printed:\n"
            f"{printed}"
        )

"""What a build executed: the pages it executes, and each code cell's outputs.

myst-nb writes every executed page's notebook to ``<builddir>/jupyter_execute``;
``executed_cells`` reads them back, each code cell under the page and line of
the cell in the page's source (the notebook's ``source_map``). Cells tagged
``measured`` show timings of the build machine on purpose (the reverse-mode
page's plot) and are left out: they differ run to run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

MEASURED = "measured"


def executed_pages(repo: Path) -> list[str]:
    """Every page of ``repo`` the build executes, as ``docs/...md`` paths."""
    return sorted(
        page.relative_to(repo).as_posix()
        for page in (repo / "docs").rglob("*.md")
        if "file_format: mystnb" in page.read_text(encoding="utf8")
    )


@dataclass(frozen=True)
class ExecutedCell:
    page: str  # docs/...md
    line: int  # the line of the cell's opening fence
    tags: tuple[str, ...]
    outputs: list[dict]  # as the notebook stores them


def executed_cells(folder: Path) -> dict[tuple[str, int], ExecutedCell]:
    """(page, fence line) -> the code cell's outputs, from a build's last run.

    ``folder`` is a build's ``jupyter_execute`` (or a folder laid out like it),
    or a copy of the site whose ``_build`` holds one.
    """
    if (folder / "_build" / "jupyter_execute").is_dir():
        folder = folder / "_build" / "jupyter_execute"
    cells = {}
    for notebook in sorted(folder.rglob("*.ipynb")):
        data = json.loads(notebook.read_text(encoding="utf8"))
        source_map = data["metadata"].get("source_map", [])
        page = f"docs/{notebook.relative_to(folder).with_suffix('.md').as_posix()}"
        for index, cell in enumerate(data["cells"]):
            tags = tuple(cell.get("metadata", {}).get("tags", []))
            if cell["cell_type"] != "code" or MEASURED in tags:
                continue
            line = source_map[index] if index < len(source_map) else index
            cells[(page, line)] = ExecutedCell(page, line, tags, cell.get("outputs", []))
    return cells


def merged_streams(outputs: list[dict]) -> list[dict]:
    """Outputs with each stream's pieces joined, as the page shows them."""
    merged: list[dict] = []
    streams: dict[str, dict] = {}
    for output in outputs:
        if output.get("output_type") != "stream":
            merged.append(output)
        elif output["name"] in streams:
            streams[output["name"]]["text"] += "".join(output["text"])
        else:
            streams[output["name"]] = {**output, "text": "".join(output["text"])}
            merged.append(streams[output["name"]])
    return merged

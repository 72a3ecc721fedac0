"""Compare what a scratch copy's pages printed with a baseline build of the same copy.

Shared by ``tools/mutants.py`` (``make mutants``) and ``tools/upgrade_check.py``
(``make upgrade-check``), which build a scratch copy of the repository
(``autograd_docs.devkit``: the copy, the build, the executed notebooks). The
copy lives in a temporary folder: the repository's own ``_build`` is only read
(its execution cache seeds the copy's, so pages that did not change are not
executed again) and ``.venv`` is only linked.

What a page prints is compared the way a reader would notice a difference:
text by its characters (streams joined, as the page shows them), figures by
their bytes, errors by their name and message (not the traceback, which quotes
the source), file paths in warnings from ``site-packages/`` on (another venv
is another folder). Cells tagged ``measured`` show timings of the build machine
on purpose and are left out.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

from autograd_docs.devkit import scratch_copy
from autograd_docs.devkit.builds import Build, make
from autograd_docs.devkit.executed import executed_cells as devkit_executed_cells
from autograd_docs.devkit.executed import merged_streams

ROOT = Path(__file__).resolve().parent.parent
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# A warning printed by a cell names the file it came from: the same file lies in
# another folder in another venv, so paths are compared from site-packages on.
SITE_PACKAGES = re.compile(r"[^\s'\"]*/site-packages/")


# -- the scratch copy and its builds ---------------------------------------------------

def copy_repo(dest: Path) -> Path:
    """A scratch copy of the repository, its execution cache seeded from ``_build``."""
    return scratch_copy.copy_repo(dest, ROOT / "_build")


def build(repo: Path, venv: Path | str = ".venv") -> Build:
    """``make html`` (the strict build) in the copy, never reinstalling anything."""
    return make(repo, "html", venv=venv)


def machine_note() -> str:
    """The cores and the load, to read a run's seconds against."""
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    return f"{os.cpu_count()} cores, load average {load}"


# -- what the pages printed ------------------------------------------------------------

@dataclass(frozen=True)
class Cell:
    page: str  # docs/...md
    line: int  # the line of the cell's opening fence
    tags: tuple[str, ...]
    outputs: tuple[tuple, ...]  # see normalized()

    @property
    def error(self) -> tuple | None:
        return next((out for out in self.outputs if out[0] == "error"), None)


def normalized(outputs: list[dict]) -> tuple[tuple, ...]:
    """A cell's outputs as compared: ``("stream", name, text)``, ``(mime, text)``,
    ``(image mime, sha256 of the bytes, size)``, ``("error", name, message)``."""
    found: list[tuple] = []
    for out in merged_streams(outputs):  # one block per stream, as the page shows it
        kind = out.get("output_type")
        if kind == "stream":
            text = SITE_PACKAGES.sub("site-packages/", out["text"])
            found.append(("stream", out["name"], text))
        elif kind == "error":
            found.append(("error", out.get("ename", ""),
                          ANSI_ESCAPE.sub("", out.get("evalue", ""))))
        else:
            for mime, data in sorted(out.get("data", {}).items()):
                data = "".join(data) if isinstance(data, list) else data
                if mime.startswith("image/") and not mime.endswith("svg+xml"):
                    raw = base64.b64decode(data)
                    found.append((mime, hashlib.sha256(raw).hexdigest()[:12], len(raw)))
                else:
                    found.append((mime, data if isinstance(data, str)
                                  else json.dumps(data, sort_keys=True)))
    return tuple(found)


def executed_cells(repo: Path) -> dict[tuple[str, int], Cell]:
    """(page, fence line) -> the cell's outputs as compared, from the copy's last
    build (``autograd_docs.devkit.executed``; cells tagged ``measured`` left out)."""
    return {key: Cell(cell.page, cell.line, cell.tags, normalized(cell.outputs))
            for key, cell in devkit_executed_cells(repo).items()}


def changed_cells(before: dict, after: dict, pages=None) -> list[tuple[Cell | None, Cell | None]]:
    """(old, new) for every cell whose outputs differ, in page and line order.

    ``pages``: only cells of these pages. A cell only one side has comes with None.
    """
    keys = sorted(key for key in set(before) | set(after)
                  if pages is None or key[0] in pages)
    return [(before.get(key), after.get(key)) for key in keys
            if getattr(before.get(key), "outputs", None)
            != getattr(after.get(key), "outputs", None)]


def as_text(outputs: tuple[tuple, ...]) -> str:
    """Outputs as a reader sees them: text, errors, and a line per figure."""
    parts = []
    for out in outputs:
        if out[0] == "error":
            parts.append(f"{out[1]}: {out[2]}")
        elif out[0] == "stream":
            parts.append(out[2].rstrip("\n"))
        elif out[0].startswith("image/"):
            parts.append(f"[{out[0]} figure, {out[2]} bytes, sha256 {out[1]}]")
        elif out[0] == "text/plain" and any(o[0].startswith("image/") for o in outputs):
            continue  # "<Figure size ...>": the figure line says it
        elif out[0] in ("text/plain", "text/markdown", "text/latex"):
            parts.append(out[1].rstrip("\n"))
        else:
            parts.append(f"[{out[0]}, {len(out[1])} characters]")
    return "\n".join(parts) if parts else "(no output)"


def side_by_side(old: str, new: str, width: int = 56) -> str:
    """Two texts in columns, ``|`` between lines that differ."""
    def wrapped(text):
        return [piece for line in text.splitlines() or [""]
                for piece in textwrap.wrap(line, width, replace_whitespace=False,
                                           drop_whitespace=False) or [""]]

    left, right = wrapped(old), wrapped(new)
    rows = max(len(left), len(right))
    left += [""] * (rows - len(left))
    right += [""] * (rows - len(right))
    return "\n".join(f"    {a:<{width}} {'|' if a != b else ' '} {b}".rstrip()
                     for a, b in zip(left, right))

"""Build a scratch copy of the repository with a change, and compare what its pages
print with a baseline build of the same copy.

Shared by ``tools/mutants.py`` (``make mutants``) and ``tools/upgrade_check.py``
(``make upgrade-check``). The copy lives in a temporary folder: the repository's
own ``_build`` is only read (its execution cache seeds the copy's, so pages that
did not change are not executed again) and ``.venv`` is only linked.

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
import subprocess
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

from autograd_docs import scratch_copy
from autograd_docs.build_log import FROM_CACHE, PageLine, split_problems

ROOT = Path(__file__).resolve().parent.parent
MEASURED = "measured"
# A warning as Sphinx prints it, located at a page ("docs/x.md:12: WARNING: ...").
WARNING = re.compile(
    r"^(?:(?:\S*/)?(?P<page>docs/[^:\s]+\.md)(?::(?P<line>\d+))?: )?"
    r".*?(?:WARNING|ERROR): (?P<message>.*)$"
)
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# A warning printed by a cell names the file it came from: the same file lies in
# another folder in another venv, so paths are compared from site-packages on.
SITE_PACKAGES = re.compile(r"[^\s'\"]*/site-packages/")


# -- the scratch copy ------------------------------------------------------------------

def copy_repo(dest: Path, seed_cache_from: Path | None = ROOT / "_build") -> Path:
    """``autograd_docs.scratch_copy.copy_repo``, seeded from the reader's build by default."""
    return scratch_copy.copy_repo(dest, seed_cache_from)


def write(path: Path, text: str) -> None:
    """Write a file so that the next build sees it as changed."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text, encoding="utf8")
    if path.stat().st_mtime_ns <= before:  # the same tick on a coarse clock
        os.utime(path, ns=(before + 1_000_000, before + 1_000_000))


def executed_pages(repo: Path) -> list[str]:
    """Every page the build executes, as ``docs/...md`` paths."""
    return sorted(
        str(page.relative_to(repo)) for page in (repo / "docs").rglob("*.md")
        if "_ext" not in page.parts
        and "file_format: mystnb" in page.read_text(encoding="utf8")
    )


# -- builds ----------------------------------------------------------------------------

@dataclass
class Warning:
    page: str | None  # docs/...md, or None when the warning names no page
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"{self.page}:{self.line}" if self.line else (self.page or "(no page)")
        return f"{where}: {self.message}"


@dataclass
class Build:
    returncode: int
    log: str
    seconds: float

    @property
    def executed(self) -> int:
        """Pages executed (failed ones too), not taken from the cache."""
        return sum(page.state != FROM_CACHE for page in PageLine.parse(self.log))

    @property
    def warnings(self) -> list[Warning]:
        """Each warning once: as printed where it arose, not again in the list of
        problems that ends a failed build's log."""
        found = []
        rest, _ = split_problems(self.log)
        for line in ANSI_ESCAPE.sub("", rest).splitlines():
            match = WARNING.match(line)
            if match:
                found.append(Warning(match["page"], int(match["line"] or 0) or None,
                                     match["message"]))
        return found

    def warnings_by_page(self) -> dict[str | None, list[Warning]]:
        pages: dict[str | None, list[Warning]] = {}
        for warning in self.warnings:
            pages.setdefault(warning.page, []).append(warning)
        return pages


def build(repo: Path, venv: Path | str = ".venv", *make_args: str) -> Build:
    """``make html`` (the strict build) in the copy, never reinstalling anything."""
    command = ["make", "--no-print-directory", "-o", f"{venv}/.installed",
               "-o", "node_modules/.installed", "html", f"VENV={venv}", *make_args]
    start = time.perf_counter()
    result = subprocess.run(command, cwd=repo, capture_output=True, text=True,
                            env=make_env())
    return Build(result.returncode, result.stdout + result.stderr,
                 time.perf_counter() - start)


def make_env() -> dict[str, str]:
    """This environment for a make in the copy, without the calling make's flags
    (``make mutants SEED=1`` would hand SEED=1 and its jobserver down)."""
    dropped = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"}
    return {**{k: v for k, v in os.environ.items() if k not in dropped}, "NO_COLOR": "1"}


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
    streams: dict[str, int] = {}
    for out in outputs:
        kind = out.get("output_type")
        if kind == "stream":
            text = SITE_PACKAGES.sub("site-packages/", "".join(out.get("text", "")))
            if out["name"] in streams:  # one block per stream, as the page shows it
                index = streams[out["name"]]
                found[index] = (*found[index][:2], found[index][2] + text)
            else:
                streams[out["name"]] = len(found)
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
    """(page, fence line) -> the cell's outputs, from the copy's last build.

    Cells tagged ``measured`` are left out.
    """
    notebooks = repo / "_build" / "jupyter_execute"
    cells = {}
    for notebook in sorted(notebooks.rglob("*.ipynb")):
        data = json.loads(notebook.read_text(encoding="utf8"))
        source_map = data["metadata"].get("source_map", [])
        page = f"docs/{notebook.relative_to(notebooks).with_suffix('.md').as_posix()}"
        for index, cell in enumerate(data["cells"]):
            tags = tuple(cell.get("metadata", {}).get("tags", []))
            if cell["cell_type"] != "code" or MEASURED in tags:
                continue
            line = source_map[index] if index < len(source_map) else index
            cells[(page, line)] = Cell(page, line, tags,
                                       normalized(cell.get("outputs", [])))
    return cells


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

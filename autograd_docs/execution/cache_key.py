"""The cache key of an executed page: what its outputs depend on beyond its code.

myst-nb's cache (jupyter-cache) keys a page on its code cells and kernelspec
only, so on its own it would serve old outputs after an edit to a snippet the
page imports, or after a torch upgrade. The fingerprint here (the snippets a page
imports, followed through their own imports, and every installed package's
version) goes into the notebook's kernelspec before the cache looks it up.
Pure functions: no Sphinx.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import re
import sys
from collections.abc import Sequence
from functools import cache
from pathlib import Path

# The kernelspec key that carries the fingerprint into jupyter-cache's hash.
FINGERPRINT_KEY = "inputs_fingerprint"
# A line of a page that may hold an import; each is read with Python's ast.
IMPORT_LINE = re.compile(r"^.*\b(?:from|import)\b.*$", re.MULTILINE)
# A line ast cannot read alone (the first of `from x import (`...): its first name.
IMPORT_START = re.compile(r"^\s*(?:from|import)\s+([A-Za-z_]\w*)")
ENGINE = Path(__file__).resolve().parent.parent  # autograd_docs/

# How nbclient records a page's outputs, whichever way the page runs
# (autograd_docs/kernels passes them). Part of every page's cache key: a change
# here re-executes every page instead of serving outputs recorded the old way.
# coalesce_streams: a cell's prints become one output per stream, their text
# joined exactly as printed, as the cell finishes. (myst-nb's nb_merge_streams
# did it at render time instead, and wrong: it rewrote the notebook's first print
# in place, stripped and ended with a newline, and left the later ones in the
# notebook too. A cell whose prints came in two messages, as they do under load,
# showed a line break that was never printed, and its notebook the rest twice.)
NBCLIENT_OPTIONS = {"coalesce_streams": True}


@cache
def environment_fingerprint() -> str:
    """Python version and every installed distribution's version."""
    packages = sorted(
        f"{dist.metadata['Name']}=={dist.version}" for dist in importlib.metadata.distributions()
    )
    return digest([sys.version, *packages])


def snippets_imported(source: str, snippets_dir: Path) -> list[Path]:
    """The snippet files a page's source imports, followed through snippets."""
    found: dict[str, Path] = {}
    pending = list(_page_imports(source))
    while pending:
        name = pending.pop()
        path = snippets_dir / f"{name}.py"
        if name in found or not path.is_file():
            continue
        found[name] = path
        pending += _top_level_imports(path.read_text(encoding="utf8"), str(path))
    return sorted(found.values())


def _page_imports(source: str) -> list[str]:
    """The modules a page's lines import, every name of each statement
    (`import json, oracle`, `import torch; import oracle`), by their first name."""
    names: list[str] = []
    for line in IMPORT_LINE.findall(source):
        try:
            names += _top_level_imports(line.strip(), "<page>")
        except SyntaxError:
            names += IMPORT_START.findall(line)
    return names


@cache
def _top_level_imports(source: str, filename: str) -> tuple[str, ...]:
    """The modules a Python source imports absolutely, by their first name.
    Remembered by the text: every page of a build asks again about the same files."""
    names: list[str] = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Import):
            names += [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module.split(".")[0])
    return tuple(names)


def engine_sources(source: str, snippets: Sequence[Path] = ()) -> list[Path]:
    """This package's own files, if a page's source imports it (a page that prints
    the engine's registry of messages must re-execute when a message changes);
    else the engine modules its snippets import (``oracle`` reads
    ``autograd_docs.claim_record``), followed through their own imports."""
    if "autograd_docs" in _page_imports(source):
        return engine_files()
    found: dict[str, Path] = {}
    pending = [
        name
        for path in snippets
        for name in _engine_imports(path.read_text(encoding="utf8"), str(path))
    ]
    while pending:
        name = pending.pop()
        parts = name.split(".")[1:]
        path = next(
            (
                candidate
                for candidate in (
                    ENGINE.joinpath(*parts, "__init__.py"),
                    ENGINE.joinpath(*parts).with_suffix(".py"),
                )
                if name.startswith("autograd_docs") and candidate.is_file()
            ),
            None,
        )
        if path is None or name in found:
            continue
        found[name] = path
        pending += _engine_imports(path.read_text(encoding="utf8"), str(path))
        pending += [".".join(name.split(".")[:-1])]  # its package's __init__ runs first
    return sorted(found.values())


@cache
def _engine_imports(source: str, filename: str) -> tuple[str, ...]:
    """The dotted names of the engine modules a Python source imports absolutely."""
    names: list[str] = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
    return tuple(name for name in names if name.split(".")[0] == "autograd_docs")


def engine_files() -> list[Path]:
    """This package's own Python files."""
    return sorted(ENGINE.rglob("*.py"))


def page_fingerprint(sources: list[Path]) -> str:
    """What a page's outputs depend on besides its code: these files' text (the
    snippets it imports) and the installed packages."""
    contents = [f"{p.name}:{p.read_text(encoding='utf8')}" for p in sources]
    return digest([environment_fingerprint(), repr(sorted(NBCLIENT_OPTIONS.items())), *contents])


def digest(parts: list[str]) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]

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
from functools import cache
from pathlib import Path

# The kernelspec key that carries the fingerprint into jupyter-cache's hash.
FINGERPRINT_KEY = "inputs_fingerprint"
IMPORT_LINE = re.compile(r"^\s*(?:from|import)\s+([A-Za-z_]\w*)", re.MULTILINE)
ENGINE = Path(__file__).resolve().parent.parent  # autograd_docs/


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
    pending = list(IMPORT_LINE.findall(source))
    while pending:
        name = pending.pop()
        path = snippets_dir / f"{name}.py"
        if name in found or not path.is_file():
            continue
        found[name] = path
        tree = ast.parse(path.read_text(encoding="utf8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                pending += [alias.name.split(".")[0] for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                pending.append(node.module.split(".")[0])
    return sorted(found.values())


def engine_sources(source: str) -> list[Path]:
    """This package's own files, if a page's source imports it (a page that prints
    the engine's registry of messages must re-execute when a message changes)."""
    if "autograd_docs" not in IMPORT_LINE.findall(source):
        return []
    return engine_files()


def engine_files() -> list[Path]:
    """This package's own Python files."""
    return sorted(ENGINE.rglob("*.py"))


def page_fingerprint(sources: list[Path]) -> str:
    """What a page's outputs depend on besides its code: these files' text (the
    snippets it imports) and the installed packages."""
    contents = [f"{p.name}:{p.read_text(encoding='utf8')}" for p in sources]
    return digest([environment_fingerprint(), *contents])


def digest(parts: list[str]) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]

"""Keep executed pages honest: never a stale output, never a silent failure.

myst-nb's cache (jupyter-cache) keys a page on its code cells and kernelspec only,
so on its own it would serve old outputs after an edit to a snippet the page
imports, or after a torch upgrade. This extension:

* tells Sphinx which ``snippets/*.py`` files each page imports (directly or
  through other snippets), so an edit to one re-reads exactly those pages;
* adds a fingerprint of those files and of the installed packages to the
  notebook's kernelspec before myst-nb looks it up in the cache, so the cache
  misses whenever anything the outputs depend on has changed;
* fails the build when a cell tagged ``raises-exception`` no longer raises;
* creates the cache database before parallel readers start (two workers
  creating it at once can race);
* runs every page in ``page_kernel`` (a kernelspec named ``python3``, so the
  downloadable notebooks still name the kernel readers have).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import json
import os
import re
import sys
from functools import cache
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

import myst_nb.sphinx_

logger = logging.getLogger(__name__)

# The kernelspec key that carries the fingerprint into jupyter-cache's hash.
FINGERPRINT_KEY = "inputs_fingerprint"
IMPORT_LINE = re.compile(r"^\s*(?:from|import)\s+([A-Za-z_]\w*)", re.MULTILINE)


@cache
def environment_fingerprint() -> str:
    """Python version and every installed distribution's version."""
    packages = sorted(
        f"{dist.metadata['Name']}=={dist.version}"
        for dist in importlib.metadata.distributions()
    )
    return _digest([sys.version, *packages])


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


def _digest(parts: list[str]) -> str:
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


# docname -> fingerprint of what its outputs depend on; filled at source-read,
# read when myst-nb creates the execution client for the same document.
_page_fingerprints: dict[str, str] = {}


def _note_snippet_dependencies(app: Sphinx, docname: str, source: list[str]) -> None:
    snippets_dir = Path(app.config.executed_pages_snippets_dir)
    snippets = snippets_imported(source[0], snippets_dir)
    for path in snippets:
        app.env.note_dependency(str(path))
    contents = [f"{p.name}:{p.read_text(encoding='utf8')}" for p in snippets]
    _page_fingerprints[str(app.env.doc2path(docname))] = _digest(
        [environment_fingerprint(), *contents]
    )


def _fingerprinting_create_client(original):
    """Wrap myst-nb's ``create_client`` so the cache key sees the fingerprint."""

    def create_client(notebook, source, *args, **kwargs):
        kernelspec = notebook.metadata.setdefault("kernelspec", {})
        kernelspec[FINGERPRINT_KEY] = _page_fingerprints.get(str(source), "")
        return _FingerprintedClient(original(notebook, source, *args, **kwargs))

    return create_client


class _FingerprintedClient:
    """Enter the real client (which executes or hits the cache), then tidy up."""

    def __init__(self, client):
        self._client = client

    def __enter__(self):
        client = self._client.__enter__()
        # The fingerprint has done its job; keep it out of the downloadable notebook.
        client.notebook.metadata["kernelspec"].pop(FINGERPRINT_KEY, None)
        _check_expected_exceptions(client)
        return client

    def __exit__(self, *exc_info):
        return self._client.__exit__(*exc_info)


def _check_expected_exceptions(client) -> None:
    """A cell tagged ``raises-exception`` that ran without raising is an error."""
    if not client.exec_metadata or client.exec_metadata.get("error"):
        return  # not executed here, or already failed: myst-nb reports that
    source_map = client.notebook.metadata.get("source_map", [])
    for index, cell in enumerate(client.notebook.cells):
        tags = cell.get("metadata", {}).get("tags", [])
        if cell.cell_type != "code" or "raises-exception" not in tags:
            continue
        if not any(out.get("output_type") == "error" for out in cell.outputs):
            line = source_map[index] if index < len(source_map) else None
            logger.warning(
                "cell tagged 'raises-exception' ran without raising: make it raise "
                "again, or remove the tag and show the working code instead",
                location=(str(client.path), line),
                type="executed_pages",
                subtype="raises",
            )


def _create_cache_database(app: Sphinx) -> None:
    if app.config.nb_execution_mode == "cache":
        from jupyter_cache import get_cache

        get_cache(app.config.nb_execution_cache_path).db  # creates it


def _install_page_kernel(app: Sphinx) -> None:
    """Write a ``python3`` kernelspec that runs ``page_kernel`` with this Python.

    JUPYTER_PATH is searched before the venv's own kernelspecs, and kernels
    started by parallel readers inherit it.
    """
    kernels = Path(app.doctreedir) / "jupyter"
    spec_dir = kernels / "kernels" / "python3"
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [sys.executable, str(Path(__file__).with_name("page_kernel.py")),
                 "-f", "{connection_file}"],
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec, indent=1), encoding="utf8")
    os.environ["JUPYTER_PATH"] = os.pathsep.join(
        filter(None, [str(kernels), os.environ.get("JUPYTER_PATH")])
    )


def setup(app: Sphinx) -> dict:
    app.add_config_value("executed_pages_snippets_dir", "snippets", "env", str)
    # Not set by conf.py: a changed environment (say, a torch upgrade) changes
    # this value, and Sphinx re-reads every page when an "env" value changes.
    app.add_config_value(
        "executed_pages_environment", environment_fingerprint(), "env", str
    )
    app.connect("builder-inited", _install_page_kernel)
    app.connect("builder-inited", _create_cache_database)
    app.connect("source-read", _note_snippet_dependencies)
    myst_nb.sphinx_.create_client = _fingerprinting_create_client(
        myst_nb.sphinx_.create_client
    )
    return {"parallel_read_safe": True, "parallel_write_safe": True}

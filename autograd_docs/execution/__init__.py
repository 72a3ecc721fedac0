"""Keep executed pages honest: never a stale output, never a silent failure.

myst-nb's cache (jupyter-cache) keys a page on its code cells and kernelspec only,
so on its own it would serve old outputs after an edit to a snippet the page
imports, or after a torch upgrade. This extension:

* tells Sphinx which ``snippets/*.py`` files each page imports (directly or
  through other snippets), so an edit to one re-reads exactly those pages;
* adds a fingerprint of those files and of the installed packages to the
  notebook's kernelspec before myst-nb looks it up in the cache, so the cache
  misses whenever anything the outputs depend on has changed;
* reports each failing cell in one line that says where it is and what to do
  (myst-nb's own report is a traceback dump; the traceback still goes to
  ``_build/html/reports``): a cell that raised, a claim that no longer holds,
  a cell that ran out of time, a ``raises-exception`` cell that no longer raises;
* says what to do about a dangling ``{ref}``, ``{doc}`` or ``{term}``, a page no
  toctree reaches, a ``literalinclude`` whose file or marker is gone and a
  failed doctest, and makes the next build report them again until they are
  fixed (Sphinx forgets warnings of pages it does not re-read);
* makes executed notebooks reproducible: cell ids that depend on the cell's
  position, not on a random number, a fixed hash seed in every kernel, and
  the outputs in ``_build/jupyter_execute`` whether a page ran or came from the
  cache, and myst-nb's stylesheet linked the same way in a clean build as in a
  rebuild, so two builds of one commit write the same bytes;
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
import logging as std_logging
import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import myst_nb.sphinx_
import myst_nb.sphinx_ext
import sphinx.domains.std
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.directives.code import LiteralInclude
from sphinx.util import logging

logger = logging.getLogger(__name__)

KERNELS = Path(__file__).parent.parent / "kernels"  # what runs a page

# The kernelspec key that carries the fingerprint into jupyter-cache's hash.
FINGERPRINT_KEY = "inputs_fingerprint"
IMPORT_LINE = re.compile(r"^\s*(?:from|import)\s+([A-Za-z_]\w*)", re.MULTILINE)
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
# myst-nb's execution report and Sphinx's orphan-page warning, replaced below by
# messages that say what to do.
REPLACED_WARNINGS = ["mystnb.exec", "toc.not_included"]
# What makes a kernel's outputs the same bytes on every build: a fixed str hash
# seed (sets print in one order), and for figures saved as SVG or PDF the
# commit's time instead of now and a fixed salt for SVG element ids. PNG, the
# inline default, carries neither.


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
        # nbformat gives each cell a random id; the written .ipynb must not change
        # from one build of the same source to the next.
        for index, cell in enumerate(notebook.cells):
            cell["id"] = f"cell-{index}"
        kernelspec = notebook.metadata.setdefault("kernelspec", {})
        kernelspec[FINGERPRINT_KEY] = _page_fingerprints.get(str(source), "")
        return _FingerprintedClient(
            original(notebook, source, *args, **kwargs), notebook
        )

    return create_client


class _FingerprintedClient:
    """Enter the real client (which executes or hits the cache), then tidy up."""

    def __init__(self, client, notebook):
        self._client = client
        self._notebook = notebook  # the one myst-nb writes to _build/jupyter_execute

    def __enter__(self):
        try:
            client = self._client.__enter__()
        except ValueError as error:
            if "hashkey already exists" not in str(error):
                raise
            # Another parallel reader executed an identical page and cached it
            # first (jupyter-cache refuses the second record): take that one.
            client = self._client.__enter__()
        if client.notebook is not self._notebook:
            # A cache hit hands back a merged copy, and myst-nb would write the
            # notebook it read, without outputs; write what the page shows.
            self._notebook.metadata = client.notebook.metadata
            self._notebook.cells = client.notebook.cells
        # The fingerprint has done its job; keep it out of the written notebook.
        client.notebook.metadata["kernelspec"].pop(FINGERPRINT_KEY, None)
        _report_failed_cell(client)
        _check_expected_exceptions(client)
        return client

    def __exit__(self, *exc_info):
        return self._client.__exit__(*exc_info)


def _check_expected_exceptions(client) -> None:
    """A cell tagged ``raises-exception`` that ran without raising is an error."""
    if not client.exec_metadata or client.exec_metadata.get("error"):
        return  # not executed here, or already failed: reported on its own
    for index, cell in enumerate(client.notebook.cells):
        tags = cell.get("metadata", {}).get("tags", [])
        if cell.cell_type != "code" or "raises-exception" not in tags:
            continue
        if not any(out.get("output_type") == "error" for out in cell.outputs):
            logger.warning(
                "cell tagged 'raises-exception' ran without raising: make it raise "
                "again, or remove the tag and show the working code instead",
                location=_cell_location(client, index),
                type="executed_pages",
                subtype="raises",
            )


def _report_failed_cell(client) -> None:
    """One line for the cell that stopped the page: where, what, what to do."""
    error = (client.exec_metadata or {}).get("error")
    if not error:
        return
    cells = client.notebook.cells
    report = _shown_path(_reports_dir / f"{_docname(client.path)}.err.log")
    if error == "CellTimeoutError":
        # The cell that timed out is the last one the kernel started (it numbers
        # a cell when it starts it), or the first if it never started one.
        started = [i for i, cell in enumerate(cells)
                   if cell.cell_type == "code" and cell.get("execution_count")]
        code = [i for i, cell in enumerate(cells) if cell.cell_type == "code"]
        index = started[-1] if started else (code or [None])[0]
        timeout = client.notebook.metadata.get("execution", {}).get(
            "timeout", client.nb_config.execution_timeout
        )
        message = (
            f"cell did not finish within {timeout} s: make it faster, or give "
            f"this page more time with 'mystnb: {{execution_timeout: N}}' "
            f"(seconds) in its front matter"
        )
    else:
        index, failure = next(
            ((i, out) for i, cell in enumerate(cells) if cell.cell_type == "code"
             for out in cell.get("outputs", []) if out.get("output_type") == "error"
             and "raises-exception" not in cell.get("metadata", {}).get("tags", [])),
            (None, {}),
        )
        name = failure.get("ename", error)
        value = "; ".join(
            line.strip()
            for line in ANSI_ESCAPE.sub("", failure.get("evalue", "")).splitlines()
            if line.strip()
        )
        if name == "ClaimFailed":
            message = (
                f"{value}: fix the code the claim checks, or the prose it quotes"
            )
        else:
            message = (
                f"cell raised {name}: {value}: fix the cell, or tag it "
                f"'raises-exception' if the error is what the page shows"
            )
    logger.warning(
        f"{message} (full traceback: {report})",
        location=_cell_location(client, index),
        type="executed_pages",
        subtype="failed",
    )


def _cell_location(client, index: int | None) -> str:
    """``path:line`` of a cell's opening fence (just the path if unknown)."""
    path = _shown_path(client.path)
    source_map = client.notebook.metadata.get("source_map", [])
    if index is None or index >= len(source_map):
        return path
    return f"{path}:{source_map[index]}"


def _shown_path(path) -> str:
    """A path as an author types it: relative to where the build runs, if inside."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def _docname(path) -> str:
    return Path(path).relative_to(_srcdir).with_suffix("").as_posix()


# Where pages live and where myst-nb writes tracebacks; set at builder-inited.
_srcdir = Path(".")
_reports_dir = Path("reports")


def _note_build_dirs(app: Sphinx) -> None:
    global _srcdir, _reports_dir
    _srcdir = Path(app.srcdir)
    _reports_dir = Path(app.outdir) / "reports"


def _copy_mystnb_css_first(app: Sphinx) -> None:
    """Put myst-nb's stylesheet in place before any page links it.

    myst-nb copies it when the build finishes, so pages of a clean build link it
    without the ``?v=<checksum>`` every later build adds: two builds of one
    commit would differ in every page.
    """
    if app.builder.format == "html":
        Path(app.outdir, "_static").mkdir(parents=True, exist_ok=True)
        myst_nb.sphinx_ext.add_global_html_resources(app, None)


def _replace_warnings(app: Sphinx, config) -> None:
    config.suppress_warnings = [*config.suppress_warnings, *REPLACED_WARNINGS]
    # nbclient logs its own line for a timeout; the report above says it better.
    std_logging.getLogger("traitlets").addFilter(
        lambda record: not record.getMessage().startswith("Timeout waiting for execute")
    )


def _hint_missing_reference(app: Sphinx, domain, node) -> bool | None:
    """Say how to mend a ``{ref}``, ``{doc}`` or ``{term}`` that points nowhere."""
    kind, target = node.get("reftype"), node.get("reftarget")
    hints = {
        "ref": f"no label {target!r}: labels are page file names (the '(label)=' "
               f"line above each title); fix the spelling, or link a page that exists",
        "doc": f"no page {target!r}: give the path of an existing page without "
               f"'.md', relative to this page or to docs/ with a leading '/'",
        "term": f"{target!r} is not in the glossary: add an entry to "
                f"docs/reference/glossary.md, or use a term it defines",
    }
    if kind not in hints:
        return None  # Sphinx's own message
    if kind == "ref" and target in domain.anonlabels:
        hints["ref"] = (f"label {target!r} is not above a title or caption: give "
                        f"the link a text, {{ref}}`text <{target}>`")
    logger.warning(f"{{{kind}}}`{target}`: {hints[kind]}", location=node,
                   type="ref", subtype=kind)
    return True


def _hint_doctest_failures(app: Sphinx, exception) -> None:
    """The doctest report shows Expected and Got; say which one to change."""
    failures = getattr(app.builder, "total_failures", 0) if app.builder else 0
    if app.builder and app.builder.name == "doctest" and failures:
        logger.warning(
            f"{failures} doctest example(s) printed something other than the page "
            f"says (each 'Failed example' above names its page and line): make "
            f"the expected output what PyTorch prints under 'Got', or fix the example",
            type="executed_pages", subtype="doctest",
        )


def _forget_failed_build(app: Sphinx, exception) -> None:
    """After a build that warnings failed, read every page again next time.

    Sphinx reports a warning only while it reads or writes the page at fault,
    and it does neither for a page that has not changed since, so a second
    ``make html`` would succeed with the mistake still there. Without the saved
    environment the next build reads every page (outputs stay cached) and
    reports every mistake again until it is fixed.
    """
    # Sphinx 9 keeps both private; the pin in requirements.txt holds them still.
    if getattr(app, "_fail_on_warnings", False) and getattr(app, "_warncount", 0):
        Path(app.doctreedir, "environment.pickle").unlink(missing_ok=True)


def _check_every_page_is_reachable(app: Sphinx, env) -> None:
    """A page no toctree lists is built but no reader can find it."""
    included = set().union(*env.included.values())
    for docname in sorted(env.all_docs):
        if (docname in env.files_to_rebuild or docname == app.config.root_doc
                or docname in included or "orphan" in env.metadata[docname]):
            continue
        section_index = "/".join([*docname.split("/")[:-1], "index.md"])
        logger.warning(
            f"no toctree lists this page, so readers cannot reach it: add "
            f"'{docname.split('/')[-1]}' to the toctree in docs/{section_index}",
            location=docname,
            type="toc",
            subtype="unreachable",
        )


class CheckedLiteralInclude(LiteralInclude):
    """``literalinclude`` that says which snippet or marker to restore."""

    def run(self) -> list[nodes.Node]:
        relative, path = self.env.relfn2path(self.arguments[0])
        self.env.note_dependency(relative)  # restoring it re-reads this page
        reporter = self.state.document.reporter
        shown = _shown_path(path)
        if not os.path.isfile(path):
            return [reporter.warning(
                f"literalinclude: there is no file {shown}: restore the snippet, "
                f"or include one that exists", line=self.lineno)]
        text = Path(path).read_text(encoding=self.options.get("encoding", "utf8"))
        for option in ("start-after", "start-at", "end-before", "end-at"):
            marker = self.options.get(option)
            if marker and marker not in text:
                return [reporter.warning(
                    f"literalinclude: {shown} has no line with {marker!r} (the "
                    f":{option}: marker): put the marker back in the snippet, or "
                    f"change :{option}: here to a marker it has", line=self.lineno)]
        return super().run()


def _create_cache_database(app: Sphinx) -> None:
    if app.config.nb_execution_mode == "cache":
        from jupyter_cache import get_cache

        get_cache(app.config.nb_execution_cache_path).db  # creates it


def source_date_epoch(repository: Path) -> str:
    """SOURCE_DATE_EPOCH if set, else the time of the checked-out commit."""
    if "SOURCE_DATE_EPOCH" in os.environ:
        return os.environ["SOURCE_DATE_EPOCH"]
    try:
        return subprocess.run(
            ["git", "log", "-1", "--format=%ct"], cwd=repository, check=True,
            capture_output=True, text=True,
        ).stdout.strip() or "0"
    except (OSError, subprocess.CalledProcessError):
        return "0"  # not a git checkout: any fixed time keeps builds identical


def kernel_environment(repository: Path) -> dict[str, str]:
    """What every page kernel runs with, so that its outputs are the same bytes on
    every build: a fixed str hash seed (sets print in one order), and for figures
    saved as SVG or PDF the commit's time instead of now and a fixed salt for SVG
    element ids (PNG, the inline default, carries neither). Both are read when
    Python and matplotlib start, so the fork server starts with them too.
    """
    return {
        "PYTHONHASHSEED": "0",
        "MATPLOTLIBRC": str(KERNELS / "matplotlibrc"),
        "SOURCE_DATE_EPOCH": source_date_epoch(repository),
    }


def _install_page_kernel(app: Sphinx) -> None:
    """Write a ``python3`` kernelspec that runs ``page_kernel`` with this Python.

    JUPYTER_PATH is searched before the venv's own kernelspecs, and kernels
    started by parallel readers inherit it.
    """
    kernels = Path(app.doctreedir) / "jupyter"
    spec_dir = kernels / "kernels" / "python3"
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [sys.executable, str(KERNELS / "page_kernel.py"),
                 "-f", "{connection_file}"],
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
        "env": kernel_environment(Path(app.confdir)),
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
    app.connect("config-inited", _replace_warnings)
    app.connect("builder-inited", _note_build_dirs)
    app.connect("builder-inited", _install_page_kernel)
    app.connect("builder-inited", _copy_mystnb_css_first)
    app.connect("builder-inited", _create_cache_database)
    app.connect("source-read", _note_snippet_dependencies)
    # In place of Sphinx's handler for {ref}, which would print "undefined label"
    # as well (every handler of this event runs).
    for listener in list(app.events.listeners["warn-missing-reference"]):
        if listener.handler is sphinx.domains.std.warn_missing_reference:
            app.disconnect(listener.id)
    app.connect("warn-missing-reference", _hint_missing_reference)
    app.connect("build-finished", _hint_doctest_failures)
    app.connect("build-finished", _forget_failed_build, priority=900)
    app.connect("env-check-consistency", _check_every_page_is_reachable)
    app.add_directive("literalinclude", CheckedLiteralInclude, override=True)
    myst_nb.sphinx_.create_client = _fingerprinting_create_client(
        myst_nb.sphinx_.create_client
    )
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""myst-parser 5.2.0's and myst-nb 1.4.0's private API, as the engine uses it
(see ``autograd_docs._compat``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path, PurePosixPath

import myst_nb.sphinx_
import myst_nb.sphinx_ext
from myst_nb.sphinx_ import HideCodeCellNode, depart_HideCellInput
from sphinx.application import Sphinx

from autograd_docs import build_state
from autograd_docs._compat import patching


def is_myst_config_dump(record: logging.LogRecord) -> bool:
    """myst-parser logs its whole ``MdParserConfig`` at builder-inited (one long
    line). Matched on the logged object's type, not on wording."""
    from myst_parser.config.main import MdParserConfig

    return isinstance(record.args, tuple) and any(
        isinstance(arg, MdParserConfig) for arg in record.args
    )


def myst_config(app: Sphinx):
    """The ``MdParserConfig`` myst-parser parses the pages with (``env.myst_config``,
    set by its builder-inited handler), or one made from ``conf.py``'s values."""
    from myst_parser.config.main import MdParserConfig

    config = getattr(app.env, "myst_config", None)
    if isinstance(config, MdParserConfig):
        return config
    return MdParserConfig(
        **{
            name: app.config[f"myst_{name}"]
            for name, _, field in MdParserConfig().as_triple()
            if "sphinx" not in field.metadata.get("omit", [])
        }
    )


# Where myst-nb writes each page's executed notebook, under the build folder.
OUTPUT_FOLDER = myst_nb.sphinx_ext.OUTPUT_FOLDER


def wrap_create_client(wrapper: Callable) -> None:
    """Replace ``myst_nb.sphinx_.create_client`` by ``wrapper(original)``.

    The one seam where a page's notebook can be changed before the cache looks
    it up, and the executed notebook read before myst-nb writes it. On a cache
    hit myst-nb writes the notebook it read (``notebook``), not the one the
    client returns (``nb_client.notebook``), so the written notebook has no
    outputs; a one-line fix in ``myst_nb/sphinx_.py`` would retire that part
    (no upstream issue found; myst-nb's unreleased ``kernel_manager_class``,
    executablebooks/MyST-NB#721, would retire the kernel side).
    """
    patching.wrap(myst_nb.sphinx_, "create_client", wrapper)


def word_exec_table_status() -> None:
    """The execution table's Status column says "ok" or "failed", not ✅ or ❌,
    which draw as an empty box where no emoji font is installed (this build
    machine's Chromium, many readers' Linux). Rewrites the private
    ``_key2transform`` of ``myst_nb/ext/execution_tables.py`` (an entry of a
    table set to a fixed function, so nothing of upstream's to keep, unlike a
    ``patching.wrap``); retired by a myst-nb option for the table's symbols (no
    upstream issue found)."""
    from myst_nb.ext import execution_tables

    execution_tables._key2transform["succeeded"] = lambda x: "ok" if x is True else "failed"


def add_mystnb_stylesheet(app: Sphinx) -> None:
    """Copy myst-nb's stylesheet into ``_static`` now, as it does at build-finished.

    Retired when myst-nb copies it at builder-inited (pages of a clean build
    would then link it with its ``?v=`` checksum, as every later build does).
    """
    myst_nb.sphinx_ext.add_global_html_resources(app, None)


# myst-nb's hidden-cell node and the visitor that closes it; the opening visitor
# is ours (html/hidden_cells.py) until myst-nb names the <summary> by its text.
HIDDEN_CELL_NODE = HideCodeCellNode


depart_hidden_cell = depart_HideCellInput


# What myst-nb logs per page (on a logger named "mystnb-<docname>", the message
# ending " [mystnb]"): replaced by one line per page (build_log.py).
_MYSTNB_PAGE_LINES = (
    "Executing notebook using ",
    "Executed notebook in ",
    "Cached executed notebook: ",
    "Using cached notebook: ",
)


def is_mystnb_noise(record: logging.LogRecord) -> bool:
    """An INFO line of myst-nb's that build_log.py replaces or drops: the
    ``NbParserConfig`` dump (matched on its type), "Using jupyter-cache at:
    <absolute path>", the three lines per executed page (or one per cache hit) and
    "Updating N file(s) with execution table". Matched on the wording of
    myst-nb 1.4.0 (``sphinx_ext.py``, ``core/execute/cache.py``,
    ``ext/execution_tables.py``), which a release may change: then a line shows
    again, nothing breaks (``tests/test_build_log.py`` notices)."""
    from myst_nb.core.config import NbParserConfig

    if record.levelno != logging.INFO:
        return False
    if isinstance(record.args, tuple) and any(
        isinstance(arg, NbParserConfig) for arg in record.args
    ):
        return True
    message = logging.LogRecord.getMessage(record)
    if record.name.startswith("sphinx.mystnb-"):  # myst_nb.core.loggers.SphinxDocLogger
        return message.endswith(" [mystnb]") and message.startswith(_MYSTNB_PAGE_LINES)
    if record.name == "sphinx.myst_nb.sphinx_ext":
        return message.startswith("Using jupyter-cache at: ")
    if record.name == "sphinx.myst_nb.ext.execution_tables":
        return message.startswith("Updating ") and "with execution table" in message
    return False


def executes_page(app: Sphinx, docname: str) -> bool:
    """Whether myst-nb will execute ``docname`` or take it from the cache when it
    reads it: ``SphinxParser.parse`` runs a page through ``create_client`` when
    ``create_nb_reader`` reads it as a notebook, with the page's front matter
    (``mystnb:``) over the configuration; ``create_client`` then executes unless
    the mode is "off", the path is excluded, or the mode is "auto" and no code
    cell lacks outputs (myst-nb 1.4.0, ``sphinx_.py`` and ``core/execute/``)."""
    notebook = page_notebook(app, docname)
    if notebook is None:
        return False
    path = Path(app.env.doc2path(docname))
    config = app.env.mystnb_config  # type: ignore[attr-defined]
    overrides = notebook.metadata.get(config.metadata_key, {})
    mode = overrides.get("execution_mode", config.execution_mode)
    patterns = overrides.get("execution_excludepatterns", config.execution_excludepatterns)
    if mode == "off" or any(PurePosixPath(path.as_posix()).match(p) for p in patterns):
        return False
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    if mode == "auto":
        return any(not cell.get("outputs") for cell in code)
    return mode in ("cache", "force", "inline")


def page_notebook(app: Sphinx, docname: str):
    """The notebook myst-nb reads ``docname`` as (``create_nb_reader``, with its
    ``source_map``), or None if it reads the page as plain Markdown. Asked by the
    build log, the kernels and the reading order, for the same pages, before
    parallel readers fork: read once per version of the file."""
    from myst_nb.core.read import create_nb_reader

    path = Path(app.env.doc2path(docname))
    if not path.is_file():
        return None
    read = build_state.of(app).notebooks
    key = (str(path), path.stat().st_mtime_ns)
    if key not in read:
        text = path.read_text(encoding="utf8")
        # Set on the environment by myst-nb's and myst-parser's builder-inited handlers.
        config = app.env.mystnb_config  # type: ignore[attr-defined]
        parser_config = app.env.myst_config  # type: ignore[attr-defined]
        reader = create_nb_reader(str(path), parser_config, config, text)
        read[key] = None if reader is None else reader.read(text)
    return read[key]


def execution_seconds(env, docname: str) -> float | None:
    """How long myst-nb last took to execute ``docname`` (kernel start to shutdown),
    from its record in the saved environment (private ``NbMetadataCollector``);
    None if it never did."""
    try:
        data = myst_nb.sphinx_.NbMetadataCollector.get_exec_data(env, docname)
    except Exception:  # noqa: BLE001 -- an estimate: any surprise means "unknown"
        return None
    runtime = (data or {}).get("runtime")
    return float(runtime) if isinstance(runtime, int | float) else None

"""Every private hook of Sphinx, myst-nb, jupyter-cache and nbclient, in one place.

Each hook names the version it was written against (the pins in requirements.txt)
and what upstream would retire it. After bumping one of those pins, read this file
first: ``tests/test_engine.py`` fails until ``WRITTEN_AGAINST`` says the new
version, so the bump cannot land without someone re-checking these hooks.

One private hook lives elsewhere: ``kernels/child.py`` calls
``atexit._run_exitfuncs`` (CPython) in a forked kernel before ``os._exit``; the
server runs as a plain script and imports nothing from this package.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from types import SimpleNamespace

import myst_nb.sphinx_
import myst_nb.sphinx_ext
import sphinx.domains.std
from myst_nb.sphinx_ import HideCodeCellNode, depart_HideCellInput
from sphinx.application import Sphinx
from sphinx.config import Config

WRITTEN_AGAINST = {
    "sphinx": "9.0.4",
    "myst-parser": "5.2.0",
    "myst-nb": "1.4.0",
    "jupyter-cache": "1.0.1",
    "nbclient": "0.11.0",
}

# -- myst-parser 5.2.0 ---------------------------------------------------------------


def is_myst_config_dump(record: logging.LogRecord) -> bool:
    """myst-parser logs its whole ``MdParserConfig`` at builder-inited (one long
    line). Matched on the logged object's type, not on wording."""
    from myst_parser.config.main import MdParserConfig

    return isinstance(record.args, tuple) and any(
        isinstance(arg, MdParserConfig) for arg in record.args
    )


# -- myst-nb 1.4.0 -------------------------------------------------------------------

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
    myst_nb.sphinx_.create_client = wrapper(myst_nb.sphinx_.create_client)


def word_exec_table_status() -> None:
    """The execution table's Status column says "ok" or "failed", not ✅ or ❌,
    which draw as an empty box where no emoji font is installed (this build
    machine's Chromium, many readers' Linux). Rewrites the private
    ``_key2transform`` of ``myst_nb/ext/execution_tables.py``; retired by a
    myst-nb option for the table's symbols (no upstream issue found)."""
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


def quiet_nbclient_timeout_line() -> None:
    """nbclient 0.11 logs "Timeout waiting for execute reply" itself; our report
    says it better. Matched on the message, which nbclient may reword."""
    logging.getLogger("traitlets").addFilter(
        lambda record: not record.getMessage().startswith("Timeout waiting for execute")
    )


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


# (path, its mtime) -> executes_page's answer: the build log and the reading
# order both ask, for the same pages, before parallel readers fork.
_executes: dict[tuple[str, int], bool] = {}


def executes_page(app: Sphinx, docname: str) -> bool:
    """Whether myst-nb will execute ``docname`` or take it from the cache when it
    reads it: ``SphinxParser.parse`` runs a page through ``create_client`` when
    ``create_nb_reader`` reads it as a notebook, with the page's front matter
    (``mystnb:``) over the configuration; ``create_client`` then executes unless
    the mode is "off", the path is excluded, or the mode is "auto" and no code
    cell lacks outputs (myst-nb 1.4.0, ``sphinx_.py`` and ``core/execute/``)."""
    path = Path(app.env.doc2path(docname))
    if not path.is_file():
        return False
    key = (str(path), path.stat().st_mtime_ns)
    if key not in _executes:
        _executes[key] = _executes_page(app, path)
    return _executes[key]


def _executes_page(app: Sphinx, path: Path) -> bool:
    from myst_nb.core.read import create_nb_reader

    text = path.read_text(encoding="utf8")
    # Set on the environment by myst-nb's and myst-parser's builder-inited handlers.
    config = app.env.mystnb_config  # type: ignore[attr-defined]
    parser_config = app.env.myst_config  # type: ignore[attr-defined]
    reader = create_nb_reader(str(path), parser_config, config, text)
    if reader is None:
        return False
    notebook = reader.read(text)
    overrides = notebook.metadata.get(config.metadata_key, {})
    mode = overrides.get("execution_mode", config.execution_mode)
    patterns = overrides.get("execution_excludepatterns", config.execution_excludepatterns)
    if mode == "off" or any(PurePosixPath(path.as_posix()).match(p) for p in patterns):
        return False
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    if mode == "auto":
        return any(not cell.get("outputs") for cell in code)
    return mode in ("cache", "force", "inline")


# -- jupyter-cache 1.0.1 -------------------------------------------------------------


def wrap_executenb(wrapper: Callable) -> None:
    """Replace the ``executenb`` (nbclient's ``execute``) that jupyter-cache's
    ``single_nb_execution`` calls by ``wrapper(original)``.

    The one call through which myst-nb executes a page, in both its cache and
    its direct mode; myst-nb 1.4 passes it no kernel manager and no shutdown
    mode. Retired by myst-nb's ``kernel_manager_class`` (executablebooks/MyST-NB#721).
    """
    import jupyter_cache.executors.utils

    # Each build's setup wraps it: wrap the original, never an earlier wrapper.
    original = jupyter_cache.executors.utils.executenb
    original = getattr(original, "__wrapped__", original)
    wrapped = wrapper(original)
    wrapped.__wrapped__ = original
    jupyter_cache.executors.utils.executenb = wrapped


def serialize_cache_access() -> None:
    """Let one process at a time into jupyter-cache's ``cache_notebook_bundle``
    and ``merge_match_into_notebook``, under a lock file in the cache's folder.

    Parallel readers share the cache, and caching with ``overwrite=True`` (as
    myst-nb does) is five separate steps: remove the notebook's folder, remove
    its record, add a record, make the folder, write the file. Two readers that
    executed identical pages interleaved them and failed in one of four places
    (a duplicate hashkey, the folder or the file already there, and a lookup
    touching a record the other had just removed: StaleDataError). Under the
    lock the second simply replaces the first's identical record. Reads the
    private ``_path``; retired by a process-safe jupyter-cache.
    """
    from filelock import FileLock
    from jupyter_cache.cache.main import JupyterCacheBase

    for name in ("cache_notebook_bundle", "merge_match_into_notebook"):
        original = getattr(JupyterCacheBase, name)
        if getattr(original, "serialized", False):
            continue

        def serialized(self, *args, _original=original, **kwargs):
            with FileLock(Path(self._path) / "autograd-docs.lock"):
                return _original(self, *args, **kwargs)

        serialized.serialized = True  # type: ignore[attr-defined]  # marked: never wrapped twice
        setattr(JupyterCacheBase, name, serialized)


def create_cache_database(path: str) -> None:
    """Create the cache's database now; two parallel readers creating it at once
    can race. ``.db`` creates it as a side effect of first use."""
    from jupyter_cache import get_cache

    get_cache(path).db  # noqa: B018 -- the property creates the database


# -- Sphinx 9.0.4 --------------------------------------------------------------------


def replace_std_missing_reference_handler(app: Sphinx, handler: Callable) -> None:
    """Connect ``handler`` to warn-missing-reference in place of Sphinx's own for
    the std domain (every handler of the event runs, so Sphinx's would print
    "undefined label" as well). Reads the private ``app.events.listeners``."""
    for listener in list(app.events.listeners["warn-missing-reference"]):
        if listener.handler is sphinx.domains.std.warn_missing_reference:
            app.disconnect(listener.id)
    app.connect("warn-missing-reference", handler)


def build_failed_on_warnings(app: Sphinx) -> bool:
    """Whether ``-W`` turned this build's warnings into a failure (private
    ``_fail_on_warnings`` and ``_warncount``). Retired by Sphinx keeping the
    warnings of pages it does not re-read (sphinx-doc/sphinx#725)."""
    return bool(getattr(app, "_fail_on_warnings", False) and getattr(app, "_warncount", 0))


def config_value_at_setup(config: Config, name: str, default=None):
    """A configuration value while extensions are still loading, before Sphinx
    has read it into ``config`` (private ``_overrides`` and ``_raw_config``)."""
    return config._overrides.get(name, config._raw_config.get(name, default))


def log_handlers() -> tuple[logging.Handler, logging.Handler]:
    """Sphinx's two handlers on its "sphinx" logger, made by
    ``sphinx.util.logging.setup``: the status stream's (INFO, a
    ``NewLineStreamHandler``) and the warning stream's (a
    ``WarningStreamHandler``). A filter added to one after Sphinx's own sees each
    record once it is translated (``record.location`` is then a path) and only if
    it is shown (suppressed and repeated warnings are gone), in the main process:
    a parallel reader's records are replayed there, while the reader's own
    handlers are set aside (``LogCollector``)."""
    from sphinx.util.logging import NAMESPACE, NewLineStreamHandler, WarningStreamHandler

    handlers = logging.getLogger(NAMESPACE).handlers
    info = next(h for h in handlers if type(h) is NewLineStreamHandler)
    warning = next(h for h in handlers if type(h) is WarningStreamHandler)
    return info, warning


def is_sphinx_noise(record: logging.LogRecord) -> bool:
    """ "Writing evaluated template result to <absolute path>", one line per static
    template (``sphinx.util.fileutil.copy_asset_file``), matched on its type."""
    return (getattr(record, "type", None), getattr(record, "subtype", None)) == (
        "misc",
        "template_evaluation",
    )


def status_line_is_rewritten(app: Sphinx) -> bool:
    """Whether Sphinx redraws its progress ("reading sources... [ 50%]") on one
    terminal line (``sphinx.util.display.status_iterator``): a line written
    between two redraws must erase it first."""
    from sphinx.util.console import terminal_supports_colour

    return app.verbosity < 1 and terminal_supports_colour()


def save_environment_with_config(config_to_save: Callable[[Config], Config | None]) -> None:
    """Pickle each build environment with ``config_to_save(env.config)`` (when not
    None) in place of the live configuration.

    Sphinx pickles ``env.config``, which is ``app.config`` itself, after
    builder-inited; the next build compares it with its own ``app.config`` before
    builder-inited. Values that extensions and the HTML builder extend in between
    (``html_static_path``, ``html_css_files`` and ``html_js_files`` given a
    priority in place, ``mathjax4_config``, furo's defaults) then always differ,
    and every rebuild says "The configuration has changed". Wraps the private
    ``BuildEnvironment.__getstate__``; retired when Sphinx saves the
    configuration it compared (no upstream issue found).
    """
    from sphinx.environment import BuildEnvironment

    original = BuildEnvironment.__getstate__
    original = getattr(original, "_autograd_docs_original", original)  # once per process

    def __getstate__(self):
        state = original(self)
        saved = config_to_save(state["config"]) if state.get("config") is not None else None
        if saved is not None:
            state["config"] = saved
        return state

    # The monkeypatch, marked with the original it wraps: a second call wraps that.
    __getstate__._autograd_docs_original = original  # type: ignore[attr-defined]
    BuildEnvironment.__getstate__ = __getstate__  # type: ignore[method-assign]


def complete_incremental_search_index() -> None:
    """Make the searchindex.js of an incremental build the one a clean build writes.

    Sphinx 9.0.4's ``IndexBuilder`` (``sphinx/search/__init__.py``) keeps what
    it knows of the pages it does not write again from the last searchindex.js,
    but ``prune`` empties the word entries of the pages it writes again without
    dropping them (a word no page uses any more stays as ``"word": []``), and
    ``load`` does not read the glossary and index entries ("indexentries")
    back, so only those of the pages written this time were kept (Sphinx
    collects them while writing, after it has pickled the environment).
    Replaces ``sphinx.search.IndexBuilder``, which the HTML builder imports when
    it starts writing, by a subclass that does both, and lists the entries in
    page order (as a clean build feeds pages) whatever order pages were written
    in. Reads the private ``_mapping``, ``_title_mapping`` and
    ``_index_entries``; retired by an index that is pruned and loaded whole
    upstream (no upstream issue found).
    """
    import sphinx.search

    if getattr(sphinx.search.IndexBuilder, "loads_index_entries", False):
        return  # once per process

    class IndexBuilder(sphinx.search.IndexBuilder):
        loads_index_entries = True

        def load(self, stream, format) -> None:
            if isinstance(format, str):
                format = self.formats[format]
            frozen = format.load(stream)
            super().load(stream, SimpleNamespace(load=lambda _stream: frozen))
            # Sphinx's own load has checked the format; its docnames are valid.
            entries: dict[str, list[tuple[str, str, str]]] = {}
            for entry, places in frozen.get("indexentries", {}).items():
                for doc, target_id, main in places:
                    entries.setdefault(frozen["docnames"][doc], []).append(
                        (entry, target_id, "main" if main else "")
                    )
            self._index_entries.clear()
            self._index_entries.update(entries)

        def prune(self, docnames) -> None:
            docnames = set(docnames)
            super().prune(docnames)
            for mapping in (self._mapping, self._title_mapping):
                for word in [word for word, pages in mapping.items() if not pages]:
                    del mapping[word]
            for docname in [name for name in self._index_entries if name not in docnames]:
                del self._index_entries[docname]

        def freeze(self) -> dict:
            in_page_order = sorted(self._index_entries.items())
            self._index_entries.clear()
            self._index_entries.update(in_page_order)
            return super().freeze()

    sphinx.search.IndexBuilder = IndexBuilder  # type: ignore[misc]  # the monkeypatch


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


# -- Sphinx 9.0.4: intersphinx's loaded inventory; myst-parser 5.2.0: its config ----


def intersphinx_urls(env) -> dict[str, str]:
    """``"py:function torch.x"`` -> the URL intersphinx links that name to.

    ``env.intersphinx_inventory`` is what ``InventoryAdapter`` fills (private);
    its items are ``_InventoryItem`` (``.uri``) in Sphinx 9, tuples before.
    """
    urls = {}
    for kind, items in getattr(env, "intersphinx_inventory", {}).items():
        for name, item in items.items():
            urls[f"{kind} {name}"] = getattr(item, "uri", None) or item[2]
    return urls


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

"""Sphinx 9.0.4's private API, intersphinx's included, as the engine uses it
(see ``autograd_docs._compat``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import SimpleNamespace
from typing import TYPE_CHECKING

import sphinx.domains.std
from sphinx.application import Sphinx
from sphinx.builders import Builder
from sphinx.config import Config
from sphinx.util.parallel import make_chunks

from autograd_docs._compat import patching

if TYPE_CHECKING:
    from sphinx.search import IndexBuilder


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

    def wrapper(original: Callable) -> Callable:
        def __getstate__(self):
            state = original(self)
            saved = config_to_save(state["config"]) if state.get("config") is not None else None
            if saved is not None:
                state["config"] = saved
            return state

        return __getstate__

    patching.wrap(BuildEnvironment, "__getstate__", wrapper)


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

    patching.wrap(sphinx.search, "IndexBuilder", _complete_index_builder)


def _complete_index_builder(original: type[IndexBuilder]) -> type[IndexBuilder]:
    """Sphinx's ``IndexBuilder`` (``original``), subclassed as
    ``complete_incremental_search_index`` says."""

    class CompleteIndexBuilder(original):  # type: ignore[valid-type,misc]
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

    return CompleteIndexBuilder


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


def one_chunk_in_the_main_process() -> None:
    """Read, or write, in the main process the pages that would go to one fork.

    Sphinx 9.0.4 forks readers for any number of pages to read (its minimum of
    six went in sphinx-doc/sphinx#12796), and writers for all pages but the
    first. One chunk in one fork runs no sooner than in the main process: it
    only adds the fork and, for a read, the environment pickled back. With two
    or more readers that is a read of one page (two pages already make two
    chunks); with ``-j 2`` (one writer) a write of up to 11 pages, with more
    writers one of 2. A one-page edit of the real site built in 3.21 s with
    this against 3.54 s without (-j auto on 2 cores, alternated, medians of 7).
    Wraps the private ``Builder._read_parallel`` and ``_write_parallel`` to call
    ``_read_serial`` and ``_write_serial`` then, chunks counted by Sphinx's own
    ``make_chunks``; retired by a minimum upstream.
    """
    patching.wrap(Builder, "_read_parallel", _serial_for_one_chunk("_read_serial", list))
    # _write_parallel writes its first page in the main process, then forks for the rest.
    patching.wrap(
        Builder, "_write_parallel", _serial_for_one_chunk("_write_serial", lambda d: d[1:])
    )


def _serial_for_one_chunk(serial: str, forked: Callable) -> Callable:
    """A wrapper (``patching.wrap``) of ``original(builder, docnames, nproc)`` that
    calls ``builder.<serial>(docnames)`` instead when the pages the original would
    fork for (``forked(docnames)``) make one chunk or none."""

    def wrapper(original: Callable) -> Callable:
        def replacement(builder, docnames, nproc: int) -> None:
            if len(make_chunks(list(forked(docnames)), nproc)) > 1:
                return original(builder, docnames, nproc)
            return getattr(builder, serial)(docnames)

        return replacement

    return wrapper

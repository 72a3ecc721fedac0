"""Executed pages: never a stale output, never a silent failure.

The one wrapper of myst-nb's execution client (``create_client``). Before the
cache looks a page up, it numbers the cells (``cell-0``, ``cell-1``: nbformat
would give them random ids) and adds the page's cache key (``cache_key``); after
the page ran or came from the cache, it keeps the outputs in the notebook myst-nb
writes, and hands the result to the checks (``checks``) and to the claims
(``claims``: the sentences hidden checks quote, held to the prose). It also tells Sphinx
which snippets each page imports, so an edit to one re-reads exactly those pages.
"""

from __future__ import annotations

import functools
import time

from sphinx.application import Sphinx
from sphinx.errors import ConfigError

from autograd_docs import _compat, build_log, build_state, settings
from autograd_docs.execution import cache_key, checks, claims

# myst-nb's execution report, replaced by the one-line reports of ``checks``.
REPLACED_WARNINGS = ["mystnb.exec"]


def _note_snippet_dependencies(app: Sphinx, docname: str, source: list[str]) -> None:
    snippets = cache_key.snippets_imported(source[0], settings.of(app).snippets)
    sources = [*snippets, *cache_key.engine_sources(source[0], snippets)]
    for path in sources:
        app.env.note_dependency(str(path))
    fingerprints = build_state.of(app).page_fingerprints
    fingerprints[str(app.env.doc2path(docname))] = cache_key.page_fingerprint(sources)


def _page_client(app: Sphinx, original):
    """Wrap myst-nb's ``create_client`` for the build ``app``: cell ids and
    cache key in, checks out."""

    def create_client(notebook, source, *args, **kwargs):
        # nbformat gives each cell a random id; the written .ipynb must not change
        # from one build of the same source to the next.
        for index, cell in enumerate(notebook.cells):
            cell["id"] = f"cell-{index}"
        kernelspec = notebook.metadata.setdefault("kernelspec", {})
        fingerprint = build_state.of(app).page_fingerprints.get(str(source), "")
        kernelspec[cache_key.FINGERPRINT_KEY] = fingerprint
        return _PageClient(app, original(notebook, source, *args, **kwargs), notebook)

    return create_client


class _PageClient:
    """Enter the real client (which executes or hits the cache), then tidy up."""

    def __init__(self, app: Sphinx, client, notebook):
        self._app = app
        self._client = client
        self._notebook = notebook  # the one myst-nb writes to _build/jupyter_execute

    def __enter__(self):
        start = time.perf_counter()
        try:
            client = self._client.__enter__()
        except Exception:
            seconds = time.perf_counter() - start
            build_log.page_done(self._app, self._client.path, seconds, build_log.FAILED)
            raise
        from_cache = client.notebook is not self._notebook
        if from_cache:
            # A cache hit hands back a merged copy, and myst-nb would write the
            # notebook it read, without outputs; write what the page shows.
            self._notebook.metadata = client.notebook.metadata
            self._notebook.cells = client.notebook.cells
        # The fingerprint has done its job; keep it out of the written notebook.
        client.notebook.metadata["kernelspec"].pop(cache_key.FINGERPRINT_KEY, None)
        if client.exec_metadata:  # else execution is off for this page: no line
            # Seconds: myst-nb's (kernel start to shutdown) for a page executed
            # here, the look-up for one from the cache.
            seconds = time.perf_counter() - start
            if from_cache:
                state = build_log.FROM_CACHE
            else:
                failed = client.exec_metadata.get("error")
                state = build_log.FAILED if failed else build_log.EXECUTED
                seconds = client.exec_metadata.get("runtime") or seconds
            build_log.page_done(self._app, client.path, seconds, state)
        checks.check_executed(self._app, client)
        claims.take(self._app, client)
        return client

    def __exit__(self, *exc_info):
        return self._client.__exit__(*exc_info)


def _refuse_merging_streams_at_render(app: Sphinx, config) -> None:
    if config.nb_merge_streams:
        raise ConfigError(
            "conf.py: nb_merge_streams = True rewrites a cell's first print in place when "
            "its prints arrive in more than one message (a line break never printed, the "
            "rest twice in the notebook). Set it to False: the engine already joins a "
            "cell's prints as it executes it (cache_key.NBCLIENT_OPTIONS)"
        )


def _replace_warnings(app: Sphinx, config) -> None:
    config.suppress_warnings = [*config.suppress_warnings, *REPLACED_WARNINGS]
    _compat.quiet_nbclient_timeout_line()


def _create_cache_database(app: Sphinx) -> None:
    if app.config.nb_execution_mode == "cache":
        _compat.create_cache_database(app.config.nb_execution_cache_path)


def setup(app: Sphinx) -> dict:
    app.setup_extension("autograd_docs.settings")
    # Not set by conf.py: a changed environment (say, a torch upgrade) changes
    # this value, and Sphinx re-reads every page when an "env" value changes.
    app.add_config_value(
        "autograd_docs_environment", cache_key.environment_fingerprint(), "env", str
    )
    app.connect("config-inited", _replace_warnings)
    app.connect("config-inited", _refuse_merging_streams_at_render)
    # Before parallel readers start: two workers creating it at once can race.
    app.connect("builder-inited", _create_cache_database)
    _compat.serialize_cache_access()
    _compat.word_exec_table_status()
    app.connect("source-read", _note_snippet_dependencies)
    _compat.wrap_create_client(functools.partial(_page_client, app))
    claims.connect(app)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Every private hook of the engine's upstreams, in one place: this package,
one module per upstream (``myst.py``, ``jupyter.py``, ``sphinx.py``,
``autobuild.py``, and ``process.py`` for CPython, IPython and ipykernel), each
hook imported here, where the engine finds it as ``_compat.<hook>``. A hook
that replaces an upstream function or class does it with ``patching.wrap``.

Each hook names the version it was written against (the pins in requirements.txt)
and what upstream would retire it. After bumping one of those pins, read its module
first: ``tests/test_engine.py`` fails until ``WRITTEN_AGAINST`` says the new
version, so the bump cannot land without someone re-checking these hooks.

Two modules are not imported here:

* ``process.py`` (CPython's ``atexit``, IPython 9.18.1, ipykernel 7.4.0): the
  hooks of a page's own process, which runs ``kernels/`` scripts and loads this
  file by its path (``kernels/child.py``), so that a page never imports Sphinx
  or the engine; ``devkit/warm_autobuild.py`` imports it as a module.
* ``autobuild.py`` (sphinx-autobuild), which only ``make livehtml`` uses, so
  that a build never imports sphinx-autobuild.

``kernels/page_client.py``'s ``PageManager`` and ``PageKernelClient`` stand in
for jupyter_client's manager and client as nbclient 0.11.0 calls them (the
public ``km=`` of ``execute``); ``jupyter.wrap_executenb`` says what retires them.
"""

from autograd_docs._compat.jupyter import (
    cells_to_run,
    create_cache_database,
    quiet_nbclient_timeout_line,
    serialize_cache_access,
    wrap_executenb,
)
from autograd_docs._compat.myst import (
    HIDDEN_CELL_NODE,
    OUTPUT_FOLDER,
    add_mystnb_stylesheet,
    depart_hidden_cell,
    executes_page,
    execution_seconds,
    is_myst_config_dump,
    is_mystnb_noise,
    myst_config,
    page_notebook,
    word_exec_table_status,
    wrap_create_client,
)
from autograd_docs._compat.sphinx import (
    build_failed_on_warnings,
    complete_incremental_search_index,
    intersphinx_urls,
    is_sphinx_noise,
    log_handlers,
    one_chunk_in_the_main_process,
    replace_std_missing_reference_handler,
    save_environment_with_config,
    status_line_is_rewritten,
)

WRITTEN_AGAINST = {
    "sphinx": "9.0.4",
    "myst-parser": "5.2.0",
    "myst-nb": "1.4.0",
    "jupyter-cache": "1.0.1",
    "nbclient": "0.11.0",
    "sphinx-autobuild": "2025.8.25",
    "ipykernel": "7.4.0",
    "ipython": "9.18.1",
}

__all__ = [
    "HIDDEN_CELL_NODE",
    "OUTPUT_FOLDER",
    "WRITTEN_AGAINST",
    "add_mystnb_stylesheet",
    "build_failed_on_warnings",
    "cells_to_run",
    "complete_incremental_search_index",
    "create_cache_database",
    "depart_hidden_cell",
    "executes_page",
    "execution_seconds",
    "intersphinx_urls",
    "is_myst_config_dump",
    "is_mystnb_noise",
    "is_sphinx_noise",
    "log_handlers",
    "one_chunk_in_the_main_process",
    "myst_config",
    "page_notebook",
    "quiet_nbclient_timeout_line",
    "replace_std_missing_reference_handler",
    "save_environment_with_config",
    "serialize_cache_access",
    "status_line_is_rewritten",
    "word_exec_table_status",
    "wrap_create_client",
    "wrap_executenb",
]

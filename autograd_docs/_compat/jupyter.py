"""jupyter-cache 1.0.1's and nbclient 0.11.0's private API, as the engine uses
it (see ``autograd_docs._compat``)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from autograd_docs._compat import patching

if TYPE_CHECKING:
    from nbformat import NotebookNode


def wrap_executenb(wrapper: Callable) -> None:
    """Replace the ``executenb`` (nbclient's ``execute``) that jupyter-cache's
    ``single_nb_execution`` calls by ``wrapper(original)``.

    The one call through which myst-nb executes a page, in both its cache and
    its direct mode; myst-nb 1.4 passes it no kernel manager and no shutdown
    mode. Retired by myst-nb's ``kernel_manager_class`` (executablebooks/MyST-NB#721,
    #725; unreleased in 1.5.0.dev): then ``kernels/page_client.PageManager`` is
    that class, nbclient creates it per page, and this wrapper,
    ``PageRunner.executenb`` and ``execute_page`` go. What ``PageManager`` still needs for that: the
    page's cells from nbclient's ``execute`` requests instead of up front
    (``cells_to_run``'s copy of nbclient's rules goes too), and the socket of the
    build's server from a class attribute set when the runner starts.
    """
    import jupyter_cache.executors.utils

    patching.wrap(jupyter_cache.executors.utils, "executenb", wrapper)


def cells_to_run(notebook: NotebookNode, allow_errors: bool) -> list[dict]:
    """The cells nbclient will ask the kernel to run, in its order and with its
    ``stop_on_error``: a copy of nbclient 0.11.0's rules (``async_execute_cell``,
    not exposed), for ``kernels/page_client.py``, which hands a page's process
    its cells up front. nbclient's requests are held to this list as they come
    (``PageKernelClient.execute`` fails loudly on a difference), and
    ``test_cells_to_run_follows_nbclient`` compares the two. Retired with
    ``wrap_executenb``, when the page's process takes its cells from nbclient's
    requests."""
    from nbclient.client import NotebookClient

    defaults = NotebookClient(notebook)
    skip_tag = defaults.skip_cells_with_tag
    cells = []
    for cell in notebook.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if cell.cell_type != "code" or not cell.source.strip() or skip_tag in tags:
            continue
        cells.append(
            {
                "source": cell.source,
                "stop_on_error": not (allow_errors or "raises-exception" in tags),
            }
        )
    return cells


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

    def serialized(original: Callable) -> Callable:
        def replacement(self, *args, **kwargs):
            with FileLock(Path(self._path) / "autograd-docs.lock"):
                return original(self, *args, **kwargs)

        return replacement

    for name in ("cache_notebook_bundle", "merge_match_into_notebook"):
        patching.wrap(JupyterCacheBase, name, serialized)


def create_cache_database(path: str) -> None:
    """Create the cache's database now; two parallel readers creating it at once
    can race. ``.db`` creates it as a side effect of first use."""
    from jupyter_cache import get_cache

    get_cache(path).db  # noqa: B018 -- the property creates the database


def quiet_nbclient_timeout_line() -> None:
    """nbclient 0.11 logs "Timeout waiting for execute reply" itself; our report
    says it better. Matched on the message, which nbclient may reword."""
    logging.getLogger("traitlets").addFilter(
        lambda record: not record.getMessage().startswith("Timeout waiting for execute")
    )

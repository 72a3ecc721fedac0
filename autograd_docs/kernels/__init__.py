"""How a page is executed: in ``page_runner.py``, in a process of its own.

Each page runs in a process forked from a warm server that imported torch once
(``server.py``), which runs the cells with ipykernel's own shell and streams the
messages back to nbclient (``page_client.py``'s stand-in kernel manager). Where
fork is not available (not Linux), or the server cannot be reached, the page
runs in a process started cold (``cold.py``) with the same request and the same
runner; the log says why once.

The server outlives the build (``warm_server.py``): the next build of the same
site, with the same interpreter, packages, engine and snippets, forks its pages
from it instead of waiting seconds for a new one to import torch. It exits
after ``autograd_docs_server_idle`` seconds without a page (600 by default;
``AUTOGRAD_DOCS_SERVER_IDLE`` overrides it, and 0 makes the server end with the
build, as ``make test`` does), or at ``make clean``.

jupyter-cache's ``executenb``, the one call through which myst-nb executes a
page, is wrapped here to call ``PageRunner.execute`` (``_compat/jupyter.py``
says what retires that wrapper), which hands the page to
``page_client.execute_page``. The runner is started once the configuration
is read when pages are likely to be read (so the server's imports overlap
Sphinx loading the saved environment), or else before pages are read, and closed when the build
finishes, or at interpreter exit if the build fails. Parallel readers (``-j``)
are forked after it starts and share it.
"""

from __future__ import annotations

import atexit
import os
from collections.abc import Callable
from pathlib import Path

from nbformat import NotebookNode
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging

from autograd_docs import _compat, settings
from autograd_docs.execution import cache_key
from autograd_docs.kernels import fork_server, warm_server, wire
from autograd_docs.kernels.environment import kernel_environment
from autograd_docs.kernels.page_client import execute_page

logger = logging.getLogger(__name__)


class PageRunner:
    """How every page of one build runs: made with the build (``setup``), started
    before pages are read, runs each page through nbclient's ``execute``
    (``original``) in a process of its own, closed when the build ends. Its
    handlers are the build's own, so jupyter-cache's ``executenb``, which is
    called with no application, finds it without a module global; parallel
    readers are forked after it starts and share it."""

    def __init__(self, app: Sphinx) -> None:
        self.app = app
        self.unavailable = fork_server.unavailable_reason()  # why no page is forked
        self.owner = os.getpid()  # the build; parallel readers are forked from it
        self.environment: dict[str, str] = {}  # what every page's process starts with
        self.server: fork_server.ForkServer | None = None  # this build's own, if it has one
        self.socket_path: str | None = None
        self.started = False

    def start(self) -> None:
        """Find or start the fork server; called again is a no-op."""
        if self.started:
            return
        self.started = True
        configured = settings.of(self.app)
        site = Path(self.app.confdir)  # one warm server per site
        self.environment = kernel_environment(site, configured.snippets)
        atexit.register(self.close)  # if the build fails before build-finished
        if self.unavailable:
            logger.info(f"fork server off ({self.unavailable}): each page starts cold")
            return
        if configured.server_idle:
            try:
                self.socket_path = warm_server.socket_for(
                    self.environment, site, configured.server_idle, configured.snippets
                )
                return
            except (warm_server.NotOurs, wire.WireError, OSError) as error:
                logger.info(f"warm fork server not used ({error}): this build starts its own")
        self.server = fork_server.ForkServer(self.environment)
        self.socket_path = self.server.socket_path

    def execute(
        self, original: Callable, notebook: NotebookNode, cwd: str | None, **kwargs
    ) -> NotebookNode:
        """Run one page as ``original`` (nbclient's ``execute``) would in a kernel."""
        environment = {**os.environ, **self.environment}  # as a kernel's would be
        return execute_page(original, notebook, self.socket_path, environment, cwd=cwd, **kwargs)

    def executenb(self, original: Callable) -> Callable:
        """jupyter-cache's ``executenb`` (``original``), wrapped: this runner runs the page."""

        def executenb(notebook, cwd=None, **kwargs):
            if not self.started:
                raise RuntimeError(
                    "myst-nb executes a page that _compat.executes_page said it would not: "
                    "the engine's copy of myst-nb's rule no longer follows it"
                )
            return self.execute(original, notebook, cwd, **{**kwargs, **cache_key.NBCLIENT_OPTIONS})

        return executenb

    def start_early(self, app: Sphinx, config: Config) -> None:
        """Start as soon as the configuration is read, if pages will be read: the
        server imports while Sphinx loads the saved environment and the builder.

        If the guess says nothing changed, it waits until Sphinx knows it has
        pages to read (``start_before_reading``): a no-change rebuild never
        starts a server.
        """
        if config.nb_execution_mode != "off" and _sources_changed(app):
            self.start()

    def start_before_reading(self, app: Sphinx, env, docnames: list[str]) -> None:
        """Before pages are read (and parallel readers fork): start if any of them
        executes. A page's own front matter may execute it whatever
        nb_execution_mode says."""
        if any(_compat.executes_page(app, docname) for docname in docnames):
            self.start()

    def close(self) -> None:
        """Stop what ``start`` started; only the process that made the runner
        does (a forked reader that exits leaves it to the build)."""
        if self.server is not None and self.owner == os.getpid():
            self.server.stop()
            self.server = None

    def finish(self, app: Sphinx, exception: BaseException | None) -> None:
        """At build-finished: close now, not at exit (which would keep the
        build's application alive until then)."""
        atexit.unregister(self.close)
        self.close()


def _sources_changed(app: Sphinx) -> bool:
    """A cheap guess at whether this build will read pages: no saved environment,
    or a page, snippet or conf.py newer than it."""
    saved = Path(app.doctreedir) / "environment.pickle"
    if not saved.exists():
        return True
    since = saved.stat().st_mtime
    candidates = [Path(app.confdir) / "conf.py", *Path(app.srcdir).rglob("*.md")]
    candidates += settings.of(app).snippets.glob("*.py")
    return any(path.stat().st_mtime > since for path in candidates)


def setup(app: Sphinx) -> dict:
    app.setup_extension("autograd_docs.settings")
    runner = PageRunner(app)
    app.connect("config-inited", runner.start_early, priority=900)  # after every part's checks
    # env-before-read-docs: before parallel readers fork, and only when pages are read.
    app.connect("env-before-read-docs", runner.start_before_reading)
    app.connect("build-finished", runner.finish)
    _compat.wrap_executenb(runner.executenb)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""The ways a page can run, one class each, behind one small interface.

``conf.py`` chooses one by name (``autograd_docs_page_execution``; see
``autograd_docs.kernels``). A way is started before pages are read, runs each
page through jupyter-cache's ``executenb`` (nbclient's ``execute``, passed in as
``original``), names the command of the ``python3`` kernelspec that any kernel
it starts runs, and is closed when the build ends. Every way runs each page in
a fresh process of its own; they differ in how long that process takes to start.

A fourth way is one more subclass of ``PageExecution`` and one entry in
``WAYS``.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nbformat import NotebookNode
from sphinx.util import logging
from traitlets.config import Config

from autograd_docs.kernels import warm_server, wire
from autograd_docs.kernels.fork_server import ForkServer
from autograd_docs.kernels.page_client import ServerUnreachable, execute_forked

logger = logging.getLogger(__name__)

HERE = Path(__file__).parent


def plain_kernel_argv() -> list[str]:
    return [sys.executable, str(HERE / "page_kernel.py"), "-f", "{connection_file}"]


def launcher_argv(socket_path: str) -> list[str]:
    """The launcher's command for the server at ``socket_path``. -I -S: no
    site-packages, no user paths: it needs only the standard library."""
    return [
        sys.executable,
        "-I",
        "-S",
        str(HERE / "launcher.py"),
        socket_path,
        "-f",
        "{connection_file}",
    ]


def kernel_manager_config(folder: str) -> Config:
    """How every Jupyter kernel a page runs in is reached: over Unix sockets in
    ``folder`` (a folder of its own), where the system has them. Over TCP,
    jupyter_client picks free ports and the kernel binds them a moment later,
    and another process can take one in between (a loaded test run once failed
    so: "Address already in use")."""
    if os.name != "posix":
        return Config()
    return Config({"KernelManager": {"transport": "ipc", "ip": os.path.join(folder, "kernel")}})


def run_in_kernel(
    original: Callable, notebook: NotebookNode, cwd: str | None, **kwargs
) -> NotebookNode:
    """Run one page as nbclient's ``execute`` (``original``) does, in a Jupyter
    kernel the kernelspec starts, reached as ``kernel_manager_config`` says."""
    with tempfile.TemporaryDirectory(prefix="page-kernel-") as sockets:
        return original(notebook, cwd=cwd, config=kernel_manager_config(sockets), **kwargs)


@dataclass(frozen=True)
class Keep:
    """How long the fork server stays after the build (``warm_server.py``)."""

    site: Path  # the folder of conf.py: one warm server per site
    idle: float  # seconds without a page before it exits; 0: it ends with the build
    snippets: Path | None  # their source is part of the server's fingerprint


class PageExecution:
    """How every page of a build is executed: the interface, and what the ways
    share. Subclasses name themselves (``name``, the value of
    ``autograd_docs_page_execution``) and say whether they need a fork server
    (``forks``: then, where fork is missing, the build runs plain kernels)."""

    name: str
    forks = False

    def __init__(
        self, environment: dict[str, str], reason: str | None = None, keep: Keep | None = None
    ) -> None:
        self.environment = environment  # what every page's process starts with
        self.reason = reason  # why the build runs this way and not the configured one
        self.keep = keep  # whether, and where, what it starts outlives the build
        self.owner = os.getpid()  # the build; parallel readers are forked from it

    def start(self) -> None:
        """Start what pages need; called again is a no-op. The build calls it
        early, while Sphinx still loads, when pages are likely to be read."""

    def kernel_argv(self) -> list[str]:
        """The command of the ``python3`` kernelspec."""
        raise NotImplementedError

    def execute(
        self, original: Callable, notebook: NotebookNode, cwd: str | None, **kwargs
    ) -> NotebookNode:
        """Run one page, as ``original`` (nbclient's ``execute``, which starts
        the kernelspec's kernel) would."""
        return run_in_kernel(original, notebook, cwd, **kwargs)

    def close(self) -> None:
        """Stop what ``start`` started (called by the build, never by a reader)."""


class PlainKernels(PageExecution):
    """Each page starts a Jupyter kernel of its own (``page_kernel.py``), which
    imports torch itself: the slowest way, and the one that works everywhere."""

    name = "plain-kernels"

    def kernel_argv(self) -> list[str]:
        return plain_kernel_argv()


class ForkedKernels(PageExecution):
    """Each page's Jupyter kernel is forked from a warm server (``server.py``)
    that imported torch once; nbclient drives it over the kernel protocol, as
    any kernel. The kernelspec's command is ``launcher.py``, which asks the
    server for the kernel and stands in for it."""

    name = "forked-kernels"
    forks = True

    def __init__(
        self, environment: dict[str, str], reason: str | None = None, keep: Keep | None = None
    ) -> None:
        super().__init__(environment, reason, keep)
        self.server: ForkServer | None = None  # this build's own, if it has one
        self._socket_path: str | None = None

    def start(self) -> None:
        if self._socket_path is not None:
            return
        if self.keep is not None and self.keep.idle:
            try:
                self._socket_path = warm_server.socket_for(
                    self.environment, self.keep.site, self.keep.idle, self.keep.snippets
                )
                return
            except (warm_server.NotOurs, wire.WireError, OSError) as error:
                logger.info(f"warm fork server not used ({error}): this build starts its own")
        self.server = ForkServer(self.environment)
        self._socket_path = self.server.socket_path

    @property
    def socket_path(self) -> str:
        assert self._socket_path is not None, "start() the way before pages run"
        return self._socket_path

    def kernel_argv(self) -> list[str]:
        return launcher_argv(self.socket_path)

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None


class ForkedPages(ForkedKernels):
    """The default: each page runs in a child forked from the warm server, which
    runs the cells itself with ipykernel's shell (``page_runner.py``) and streams
    the messages back; nbclient turns them into the notebook through
    ``page_client.py``'s stand-in kernel manager, with no kernel protocol in
    between. If no server listens, the page runs through the kernelspec's
    launcher, which (finding none either) starts a plain kernel."""

    name = "forked-pages"

    def execute(
        self, original: Callable, notebook: NotebookNode, cwd: str | None, **kwargs
    ) -> NotebookNode:
        try:
            environment = {**os.environ, **self.environment}  # as a kernel's would be
            return execute_forked(
                original, notebook, self.socket_path, environment, cwd=cwd, **kwargs
            )
        except ServerUnreachable as error:
            # As the launcher does: the page still runs, and says why it is slow.
            logger.info(f"fork server unreachable ({error}): this page runs in a kernel of its own")
        return run_in_kernel(original, notebook, cwd, **kwargs)


WAYS: dict[str, type[PageExecution]] = {
    way.name: way for way in (ForkedPages, ForkedKernels, PlainKernels)
}

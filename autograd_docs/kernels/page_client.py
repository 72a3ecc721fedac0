"""The build's side of a page run by ``page_runner.py``: a kernel manager and a
kernel client that nbclient drives as it drives any kernel.

nbclient still does everything it does for a kernel: it turns each message into
the cell's outputs, numbers the cells, applies ``raises-exception`` and
``allow_errors``, times each cell out and raises ``CellExecutionError``,
``CellTimeoutError`` or ``DeadKernelError``. Only the transport is new: the
messages come, already complete, over one socket from a child the fork server
forked for the page (or, where it cannot, from a process ``cold.py`` started
for the page with the same request), instead of over ZMQ from a kernel that
answers one request at a time. There is nothing to wait for (no kernel start,
no 0.2 s ``wait_for_ready``, no graceful shutdown): "shutdown" is a SIGKILL to
a process that has finished its page.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
from collections.abc import Callable

from nbformat import NotebookNode
from sphinx.util import logging

from autograd_docs._compat import cells_to_run
from autograd_docs.kernels import wire
from autograd_docs.kernels.page_messages import Channel, PageMessages, request_id

logger = logging.getLogger(__name__)

HERE = os.path.dirname(os.path.abspath(__file__))
PAGE_RUNNER = os.path.join(HERE, "page_runner.py")
COLD = os.path.join(HERE, "cold.py")


class PageKernelClient:
    """The kernel client nbclient talks to: requests are already under way."""

    allow_stdin = False

    def __init__(self, manager: PageManager) -> None:
        self._manager = manager
        self._executed = 0
        # nbclient asks for the client once start_kernel has returned: the child
        # is forked and its reader made.
        assert manager.reader is not None
        self.shell_channel = Channel(manager.reader, "shell")
        self.iopub_channel = Channel(manager.reader, "iopub")

    def start_channels(self) -> None:
        pass

    def stop_channels(self) -> None:
        pass

    def wait_for_ready(self, timeout: float | None = None) -> None:
        pass  # the child sends the kernel-info reply first; nothing to wait for

    def kernel_info(self) -> str:
        return request_id(wire.KERNEL_INFO)

    def execute(
        self, code: str, store_history: bool = True, stop_on_error: bool = True, **_ignored
    ) -> str:
        index = self._executed
        expected = self._manager.cells
        if index >= len(expected) or expected[index] != {
            "source": code,
            "stop_on_error": stop_on_error,
        }:
            raise RuntimeError(
                f"nbclient asked to run cell {index} of a page, which the forked "
                "runner was not given: _compat.cells_to_run no longer follows "
                "nbclient's rules"
            )
        self._executed += 1
        return request_id(index)

    def is_alive(self) -> bool:
        return self._manager.is_alive()


class PageManager:
    """Stands in for a kernel manager: has the page's process made (forked by
    the server at ``socket_path``, or started cold), knows its pid, kills it at
    shutdown."""

    kernel_name = "python3"

    def __init__(self, socket_path: str | None, cells: list[dict], env: dict[str, str]) -> None:
        self.socket_path, self.cells, self.env = socket_path, cells, env
        self.pid: int | None = None
        self.exit_status: int | None = None
        self._server: socket.socket | None = None  # the server's connection, or cold.py's
        self._cold: subprocess.Popen | None = None
        self._results: socket.socket | None = None
        self.reader: PageMessages | None = None

    @property
    def has_kernel(self) -> bool:
        return self.pid is not None

    def start_kernel(self, cwd: str | None = None, **_ignored) -> None:
        """Have the server fork the page's process; if no server was given or
        none answers (the log says so), start one
        cold. ``wire.WireError`` if either refuses the request."""
        try:
            if self.socket_path is not None:
                try:
                    self._fork_child(self.socket_path, cwd)
                    return
                except (FileNotFoundError, ConnectionRefusedError) as unreachable:
                    # None there, or it refused the connection: nothing ran.
                    self.cleanup_resources()
                    logger.info(f"fork server unreachable ({unreachable}): this page runs cold")
            self._start_cold(cwd)
        except BaseException:
            self.cleanup_resources()
            raise

    def _fork_child(self, socket_path: str, cwd: str | None) -> None:
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server = server
        server.connect(socket_path)
        self._request(server, cwd)

    def _start_cold(self, cwd: str | None) -> None:
        server, cold_end = socket.socketpair()
        self._server = server
        try:
            self._cold = subprocess.Popen(
                [sys.executable, COLD, str(cold_end.fileno())],
                pass_fds=[cold_end.fileno()],
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own group, as a forked child's
                cwd=cwd,
                env=self.env,  # read as Python starts (PYTHONHASHSEED), as the server's
            )
        finally:
            cold_end.close()
        self._request(server, cwd)

    def _request(self, server: socket.socket, cwd: str | None) -> None:
        """Send the page's request to whoever makes its process; read its pid."""
        results, child_end = socket.socketpair()
        self._results = results
        devnull = os.open(os.devnull, os.O_RDONLY)
        try:
            wire.send_request(
                server,
                wire.PAGE,
                [devnull, 1, 2, child_end.fileno()],
                argv=[PAGE_RUNNER],
                cwd=cwd or os.getcwd(),
                env=self.env,
                cells=self.cells,
            )
        finally:
            os.close(devnull)
            child_end.close()
        first = server.makefile("rb").readline()
        if not first:  # it took the request and died: a bug to see, not to route round
            raise wire.WireError("the page's process was not made: the connection closed")
        self.pid = wire.read_pid(first)
        self.reader = PageMessages(results)

    def client(self) -> PageKernelClient:
        return PageKernelClient(self)

    def is_alive(self) -> bool:
        """Until the child closed its socket without finishing, or the server says
        it exited (it writes the exit status), or the cold process exited."""
        if self.reader is not None and self.reader.ended and not self.reader.finished:
            return False
        if self._cold is not None:
            self.exit_status = self._cold.poll()
        elif (
            self.exit_status is None
            and self._server is not None
            and select.select([self._server], [], [], 0)[0]
        ):
            line = self._server.recv(4096)
            self.exit_status = wire.read_status(line) if line.strip() else -9
        return self.pid is not None and self.exit_status is None

    def interrupt_kernel(self) -> None:
        self._signal(signal.SIGINT)

    def shutdown_kernel(self, now: bool = True, restart: bool = False) -> None:
        self._signal(signal.SIGKILL)

    def cleanup_resources(self, restart: bool = False) -> None:
        if self.reader is not None:
            self.reader.stop()
        for sock in (self._results, self._server):
            if sock is not None:
                sock.close()
        self._results = self._server = None
        if self._cold is not None:
            if self._cold.poll() is None:
                self._cold.kill()
            self._cold.wait()

    def _signal(self, signum: int) -> None:
        if self.pid is not None and self.exit_status is None:
            try:
                os.killpg(self.pid, signum)
            except ProcessLookupError:
                pass


def execute_page(
    execute: Callable,
    notebook: NotebookNode,
    socket_path: str | None,
    env: dict[str, str],
    cwd: str | None = None,
    **kwargs,
) -> NotebookNode:
    """Run ``notebook`` with nbclient's ``execute`` (taking the same arguments) in
    a process of its own with ``env`` as its environment: forked by the server
    at ``socket_path`` where there is one that answers, else started cold. That
    process runs the cells with ``page_runner.main`` (the server forks it and
    ``child.become`` calls it; ``cold.py`` does the same in a fresh interpreter).
    Raises whatever nbclient raises."""
    manager = PageManager(
        socket_path, cells_to_run(notebook, kwargs.get("allow_errors", False)), env
    )
    manager.start_kernel(cwd=cwd)
    try:
        return execute(notebook, cwd=cwd, km=manager, **kwargs)
    finally:
        manager.shutdown_kernel(now=True)
        manager.cleanup_resources()

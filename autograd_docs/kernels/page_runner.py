"""Run one page's cells in this process, with ipykernel's own shell, and stream
back every message ipykernel publishes for them.

Called by ``child.py`` in a child the server forked for a page (``kind: page``), in
place of a Jupyter kernel: no ZMQ sockets, heartbeat, kernel-info handshake or
shutdown request, no message round trip per cell. The page still gets what a
kernel would give it, because the shell is ipykernel's (the in-process kernel's
``ZMQInteractiveShell``, with its display publisher, display hook, matplotlib
inline backend and traceback formatting) and ``sys.stdout``/``sys.stderr`` are
ipykernel's ``OutStream``, capturing what C code writes to the file descriptors
too, as a kernel does.

The request lists the cells nbclient will ask for (``page_client.cells_to_run``
makes the list with nbclient's own rules). They run in order; every IOPub message is
tagged with the cell whose request it answers (its parent header), and after
each cell this waits for its "idle" status, then writes the reply. A cell that fails with
``stop_on_error`` ends the page, as it ends a kernel's queue. Each message is
one line on RESULTS_FD (``wire.page_message``), and last a ``done`` line. Then
the child waits for the build to hang up, so it is alive for as long as the
build reads its messages.

Only the standard library, ipykernel and its dependencies are imported here:
the fork server imports this module as a plain script. Its private hooks of
IPython and ipykernel are ``_compat/process.py``'s (loaded by ``child.py``).
"""

import os
import socket
import sys
import threading

if __package__:  # as autograd_docs.kernels.page_runner (tests)
    from autograd_docs._compat import process
    from autograd_docs.kernels import wire
else:  # as the fork server's neighbour, in a page's child: no engine package
    import wire  # type: ignore[no-redef,import-not-found]
    from child import process  # type: ignore[no-redef,import-not-found]  # _compat/process.py

IDLE_WAIT = 300  # seconds; an "idle" this late means the IOPub thread is stuck: say so


def _as_a_kernel_app_would() -> None:
    """What ``IPKernelApp.initialize`` does to the process that a page could see:
    the inline backend as matplotlib's default (``init_gui_pylab``), and the
    working folder on ``sys.path`` after the standard library (IPython's own
    ``init_path``). Not done, as not wanted: the user's IPython profile and
    startup files, which a build must not depend on."""
    if not os.environ.get("MPLBACKEND"):
        os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    process.put_working_folder_on_path()


def _kernel():
    """ipykernel's in-process kernel, configured as nbclient configures a kernel."""
    from ipykernel.inprocess.manager import InProcessKernelManager
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"  # nbclient's ipython_hist_file
    manager = InProcessKernelManager(config=config)
    manager.start_kernel()
    kernel = manager.kernel
    # A kernel's streams capture file-descriptor writes too; the in-process
    # kernel's default streams do not.
    process.capture_descriptor_writes(kernel)
    client = manager.client()
    client.start_channels()
    return kernel, client


class _Sender:
    """Writes messages to the build, one JSON line each, from either thread."""

    def __init__(self, results: socket.socket) -> None:
        from jupyter_client.jsonutil import json_default

        self._results = results
        self._default = json_default
        self._lock = threading.Lock()

    def send(self, cell: int, channel: str, msg: dict) -> None:
        msg = {key: value for key, value in msg.items() if key != "buffers"}
        line = wire.page_message(cell, channel, msg, default=self._default)
        with self._lock:
            self._results.sendall(line)


class _Requests:
    """Which cell each request ran, and which requests have gone idle.

    A message is tagged with the cell of the request it answers (its parent
    header's ``msg_id``), not with the cell running when the pump reads it:
    under load the pump lags, and a message read late was once filed under
    the next cell (a page showed another cell's prints). Requests run one at
    a time, so a message whose request has not returned yet (the in-process
    client gives a request's id when it is done) is the running cell's."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._cells: dict[str, int] = {}
        self._idle: set[str] = set()
        self._running = wire.KERNEL_INFO

    def start(self, cell: int) -> None:
        with self._changed:
            self._running = cell

    def ran(self, msg_id: str) -> None:
        with self._changed:
            self._cells[msg_id] = self._running

    def cell_of(self, msg: dict) -> int:
        with self._changed:
            return self._cells.get(msg["parent_header"].get("msg_id"), self._running)

    def went_idle(self, msg: dict) -> None:
        with self._changed:
            self._idle.add(msg["parent_header"].get("msg_id"))
            self._changed.notify_all()

    def wait_idle(self, msg_id: str) -> None:
        with self._changed:
            if not self._changed.wait_for(lambda: msg_id in self._idle, IDLE_WAIT):
                raise RuntimeError(
                    f"page runner: no 'idle' for request {msg_id!r} {IDLE_WAIT} s after it returned"
                )


def _forward_iopub(client, sender: _Sender, requests: _Requests) -> None:
    """The IOPub pump: forward each message, tagged with its request's cell."""
    while True:
        msg = client.get_iopub_msg(block=True)
        sender.send(requests.cell_of(msg), "iopub", msg)
        if msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle":
            requests.went_idle(msg)


def run(results: socket.socket, cells: list[dict]) -> None:
    """Run ``cells`` (each ``{"source", "stop_on_error"}``), streaming to ``results``."""
    _as_a_kernel_app_would()
    kernel, client = _kernel()
    sender = _Sender(results)
    requests = _Requests()

    def request(cell: int, send, *args, **kwargs) -> dict:
        """Make one request (the in-process client runs it before returning),
        wait until its messages are forwarded, return its reply."""
        requests.start(cell)
        msg_id = send(*args, **kwargs)
        requests.ran(msg_id)
        requests.wait_idle(msg_id)
        return client.get_shell_msg(block=True)

    threading.Thread(
        target=_forward_iopub, args=(client, sender, requests), daemon=True, name="iopub-pump"
    ).start()
    sender.send(wire.KERNEL_INFO, "shell", request(wire.KERNEL_INFO, client.kernel_info))
    for index, cell in enumerate(cells):
        reply = request(
            index, client.execute, cell["source"], store_history=True, allow_stdin=False
        )
        sender.send(index, "shell", reply)
        if reply["content"]["status"] == "error" and cell["stop_on_error"]:
            break
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    sender.send(wire.DONE, "done", {})


def main(results_fd: int, cells: list[dict]) -> None:
    results = socket.socket(fileno=results_fd)
    # The page's code must not find the build's socket as a stray descriptor.
    os.set_inheritable(results_fd, False)
    run(results, cells)
    results.shutdown(socket.SHUT_WR)
    results.recv(1)  # until the build hangs up (or kills this process)

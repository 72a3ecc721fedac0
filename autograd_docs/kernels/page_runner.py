"""Run one page's cells in this process, with ipykernel's own shell, and stream
back every message ipykernel publishes for them.

Called by ``server.py`` in a child it forked for a page (``kind: page``), in
place of a Jupyter kernel: no ZMQ sockets, heartbeat, kernel-info handshake or
shutdown request, no message round trip per cell. The page still gets what a
kernel would give it, because the shell is ipykernel's (the in-process kernel's
``ZMQInteractiveShell``, with its display publisher, display hook, matplotlib
inline backend and traceback formatting) and ``sys.stdout``/``sys.stderr`` are
ipykernel's ``OutStream``, capturing what C code writes to the file descriptors
too, as a kernel does.

The request lists the cells nbclient will ask for (``page_client.cells_to_run``
makes the list with nbclient's own rules). They run in order; after each, this
waits for the cell's "idle" status, so that every message is tagged with the
cell it belongs to, then writes the reply. A cell that fails with
``stop_on_error`` ends the page, as it ends a kernel's queue. Each message is
one JSON line on RESULTS_FD: ``{"cell": k, "channel": "iopub"|"shell", "msg": …}``
(``cell`` is ``-1`` for the kernel-info reply), and last a ``done`` line. Then
the child waits for the build to hang up, so it is alive for as long as the
build reads its messages.

Only the standard library, ipykernel and its dependencies are imported here:
the fork server imports this module as a plain script.
"""

import json
import os
import socket
import sys
import threading
import types

IDLE_WAIT = 30  # seconds; the "idle" of a cell that has returned is never this late
KERNEL_INFO = -1
DONE = -2  # the last line: every message was sent (a page that ends otherwise died)


def _as_a_kernel_app_would() -> None:
    """What ``IPKernelApp.initialize`` does to the process that a page could see:
    the inline backend as matplotlib's default (``init_gui_pylab``), and the
    working folder on ``sys.path`` after the standard library (IPython's own
    ``init_path``). Not done, as not wanted: the user's IPython profile and
    startup files, which a build must not depend on."""
    from IPython.core.shellapp import InteractiveShellApp

    if not os.environ.get("MPLBACKEND"):
        os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    InteractiveShellApp.init_path(types.SimpleNamespace(ignore_cwd=False))


def _kernel():
    """ipykernel's in-process kernel, configured as nbclient configures a kernel."""
    from ipykernel.inprocess.manager import InProcessKernelManager
    from ipykernel.iostream import OutStream
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"  # nbclient's ipython_hist_file
    manager = InProcessKernelManager(config=config)
    manager.start_kernel()
    kernel = manager.kernel
    # A kernel's streams capture file-descriptor writes too (IPKernelApp's
    # capture_fd_output); the in-process kernel's default streams do not.
    for name in ("stdout", "stderr"):
        setattr(kernel, name, OutStream(kernel.session, kernel.iopub_thread, name,
                                        watchfd=True))
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
        line = json.dumps({"cell": cell, "channel": channel, "msg": msg},
                          default=self._default).encode() + b"\n"
        with self._lock:
            self._results.sendall(line)


def _forward_iopub(client, sender: _Sender, state: dict, idle: threading.Event) -> None:
    """The IOPub pump: forward each message, tagged with the running cell.

    Requests run one at a time and each waits for its "idle", so the next
    "idle" that arrives is always the running request's."""
    while True:
        msg = client.get_iopub_msg(block=True)
        sender.send(state["cell"], "iopub", msg)
        if msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle":
            idle.set()


def run(results: socket.socket, cells: list[dict]) -> None:
    """Run ``cells`` (each ``{"source", "stop_on_error"}``), streaming to ``results``."""
    _as_a_kernel_app_would()
    kernel, client = _kernel()
    sender = _Sender(results)
    state = {"cell": KERNEL_INFO}
    idle = threading.Event()

    def request(send, *args, **kwargs) -> dict:
        """Make one request (the in-process client runs it before returning),
        wait for its "idle", return its reply."""
        idle.clear()
        send(*args, **kwargs)
        idle.wait(IDLE_WAIT)
        return client.get_shell_msg(block=True)

    threading.Thread(target=_forward_iopub, args=(client, sender, state, idle),
                     daemon=True, name="iopub-pump").start()
    sender.send(KERNEL_INFO, "shell", request(client.kernel_info))
    for index, cell in enumerate(cells):
        state["cell"] = index
        reply = request(client.execute, cell["source"], store_history=True,
                        allow_stdin=False)
        sender.send(index, "shell", reply)
        if reply["content"]["status"] == "error" and cell["stop_on_error"]:
            break
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    sender.send(DONE, "done", {})


def main(results_fd: int, cells: list[dict]) -> None:
    results = socket.socket(fileno=results_fd)
    # The page's code must not find the build's socket as a stray descriptor.
    os.set_inheritable(results_fd, False)
    run(results, cells)
    results.shutdown(socket.SHUT_WR)
    results.recv(1)  # until the build hangs up (or kills this process)

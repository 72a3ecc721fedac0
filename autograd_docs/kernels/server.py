"""Fork a fresh page kernel per request, from a process that imported torch once.

Usage: ``python server.py SOCKET LISTENER_FD PARENT_PID STATUS_FD LOCK_FD``
(started by ``autograd_docs.kernels``, which binds SOCKET and passes it listening as
LISTENER_FD, the write end of a pipe as STATUS_FD, and the build's lock on its
folder as LOCK_FD). On STATUS_FD the server writes ``importing`` once it watches
its parent, then ``ready`` once its imports are done, and closes it.

A plain page kernel spends about a second starting ipykernel and nearly two
importing torch, before running a page whose own code takes a fraction of that.
This server pays both once: it imports torch, numpy, matplotlib and ipykernel,
runs nothing else (no tensor op, no thread pool, no kernel), then waits on a unix
socket. For each ``launcher.py`` that connects, it forks a child that becomes
that page's kernel: a separate process, so nothing one page does reaches the
next, which starts from the server's untouched, just-imported state.

A page runner (``page_client.py`` in the build) connects the same way, with a
request of ``kind: page`` that carries the page's cells and a fourth
descriptor, the socket the child streams its messages to; its child runs
``page_runner.main()`` instead of a kernel.

The child takes the launcher's stdin, stdout and stderr (passed over the socket),
working folder, environment and arguments, undoes what it inherited from the
server (``RESETS``, one entry per thing), and runs ``page_kernel.main()``
exactly as a plain kernel would (or the page runner).

The server exits when it gets SIGTERM or SIGINT, when its parent (the Sphinx
build) exits, or when its stdin closes, and always the same way (``shutdown``):
signals blocked, every kernel it forked killed, the build's folder removed.
"""

import atexit
import contextlib
import ctypes
import gc
import importlib
import json
import os
import selectors
import shutil
import signal
import socket
import struct
import sys
import traceback

PR_SET_PDEATHSIG = 1


def die_with_parent(signum: int, parent_pid: int) -> None:
    """Ask Linux to send ``signum`` to this process when its parent exits."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the server's stdin closing does the same job
    if os.getppid() != parent_pid:  # the parent exited before prctl took effect
        os.kill(os.getpid(), signum)


# What most pages' code imports lazily, measured: most of a page's own time went
# to imports. torch._dynamo takes 0.7 s and brings torch.fx, torch._subclasses
# and sympy, which torch.func's transforms and the oracle's FlopCounterMode
# import: 18 and 27 of 31 pages. All before the first fork, never while pages
# run: what a module does as it is imported (a warning, say) must happen for
# every page or for none, not only for the pages forked before the server got
# to it.
LAZY_IMPORTS = (
    "torch._dynamo",
    "torch.utils.flop_counter",
    "torch.utils.checkpoint",
    "torch.testing",
    "PIL.PngImagePlugin",
    "pygments.lexers.python",
    # oracle.check_property's (0.3 s), and the record of a quoting check
    "hypothesis",
    "hypothesis.strategies",
    "IPython.display",
    "autograd_docs.claim_record",
)


def preload() -> None:
    """Import what (nearly) every page imports. Import only: run nothing."""
    # ipykernel sets this before a page can import matplotlib; matplotlib reads
    # it at import, so it must be set before the import here too.
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    import numpy  # noqa: F401
    import torch  # noqa: F401
    import matplotlib  # noqa: F401
    import matplotlib.pyplot  # noqa: F401
    import matplotlib.backends.backend_agg  # noqa: F401

    # Not matplotlib_inline.backend_inline: importing it hooks figures into the
    # running IPython shell, and there is none until the child starts one.
    import ipykernel.kernelapp  # noqa: F401
    import ipykernel.ipkernel  # noqa: F401
    import ipykernel.zmqshell  # noqa: F401

    # debugpy (0.07 s of every kernel start) warns on import about frozen
    # modules unless told not to validate files, as ipykernel's own kernelspec does.
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    import ipykernel.debugger  # noqa: F401
    import ipykernel.inprocess.manager  # noqa: F401  -- page_runner's kernel

    # What starting that kernel imports (its history database, its process
    # inspection, IPython's debugger), not to pay for them in every page.
    import bdb  # noqa: F401
    import psutil  # noqa: F401
    import sqlite3  # noqa: F401
    import page_kernel  # noqa: F401
    import page_runner  # noqa: F401

    for module in LAZY_IMPORTS:
        importlib.import_module(module)
    # What Python's docs advise before forking without exec: move everything
    # imported so far out of the collector's way, so a kernel's garbage
    # collections neither walk torch's objects nor copy their memory pages.
    # (Measured: a full collection in a child, 0.24 s unfrozen, 0.0005 s frozen.
    # gc.get_objects() in a page lists only what the page itself created.)
    gc.freeze()


def _recv_exactly(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ConnectionError("launcher hung up mid-request")
        data += chunk
    return data


class Server:
    def __init__(self, socket_path: str, listener_fd: int, lock_fd: int):
        self.socket_path = socket_path
        self.lock_fd = lock_fd  # held, not used: the build's folder is in use
        self.server_pid = os.getpid()
        self.selector = selectors.DefaultSelector()
        self.listener = socket.socket(fileno=listener_fd)  # bound by the build
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        self.kernels: dict[int, socket.socket] = {}  # kernel pid -> its launcher
        self.shutting_down = False

    # -- the server process ---------------------------------------------------

    def serve(self) -> None:
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # wake select to reap
        self.selector.register(self.listener, selectors.EVENT_READ, self._accept)
        self.selector.register(self.wake_r, selectors.EVENT_READ, self._reap)
        self.selector.register(0, selectors.EVENT_READ, self._parent_input)
        while True:
            for key, _ in self.selector.select():
                key.data(key.fileobj)

    def _accept(self, listener) -> None:
        conn, _ = listener.accept()
        pid = None
        try:
            conn.settimeout(10)
            # stdin, stdout, stderr, and for a page (not a kernel) the socket
            # its messages go to
            header, fds, _, _ = socket.recv_fds(conn, 4, 4)
            try:
                header += _recv_exactly(conn, 4 - len(header))
                request = json.loads(_recv_exactly(conn, struct.unpack("!I", header)[0]))
                conn.settimeout(None)
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    self._become_kernel(conn, fds, request)  # never returns
            finally:
                for fd in fds:
                    os.close(fd)
            self.kernels[pid] = conn
            try:
                os.setpgid(pid, pid)  # so a forwarded signal finds it at once
            except OSError:
                pass  # the child did it first, or already exited
            conn.sendall(json.dumps({"pid": pid}).encode() + b"\n")
            self.selector.register(conn, selectors.EVENT_READ, self._launcher_input)
        except (OSError, ValueError, struct.error):
            # The launcher hung up or sent nonsense: it falls back to a plain
            # kernel, or is gone; a kernel forked for it must not linger.
            traceback.print_exc()
            if pid is not None:
                self._kill(pid)  # reaped, and forgotten, by _reap
            else:
                conn.close()

    def _launcher_input(self, conn) -> None:
        if conn.fileno() < 0:
            # Its kernel was reaped, and the socket closed, earlier in the same
            # round of events: a page's build side hangs up as it kills the child.
            return
        try:
            if conn.recv(1):
                return  # launchers send nothing after the request; ignore it
        except OSError:
            pass
        # The launcher is gone (killed): its kernel must not outlive it.
        self.selector.unregister(conn)
        for pid, launcher in self.kernels.items():
            if launcher is conn:
                self._kill(pid)

    def _reap(self, _fd) -> None:
        try:
            while os.read(self.wake_r, 512):
                pass
        except BlockingIOError:
            pass
        while True:
            try:
                pid, wait_status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.kernels.pop(pid, None)
            if conn is None:
                continue
            status = (
                -os.WTERMSIG(wait_status)
                if os.WIFSIGNALED(wait_status)
                else os.WEXITSTATUS(wait_status)
            )
            try:
                conn.sendall(json.dumps({"status": status}).encode() + b"\n")
            except OSError:
                pass
            try:
                self.selector.unregister(conn)
            except (KeyError, ValueError):
                pass
            conn.close()

    def _parent_input(self, _fd) -> None:
        if not os.read(0, 512):
            self.shutdown()  # the build closed our stdin: it is over

    @staticmethod
    def _kill(pid: int) -> None:
        for target in (
            lambda: os.killpg(pid, signal.SIGKILL),
            lambda: os.kill(pid, signal.SIGKILL),
        ):
            try:
                target()
                return
            except OSError:
                continue

    def shutdown(self, signum: int | None = None, _frame=None, code: int = 0) -> None:
        """The server's one way out: kill and reap every kernel, remove the
        build's folder, exit. Never returns.

        It is the SIGTERM and SIGINT handler too, and once started it ignores
        both: the build's death closes our stdin and then sends PDEATHSIG, so the
        signal arrives while shutdown runs for the closed stdin, and a SystemExit
        raised between removing the socket and removing the folder left the
        folder behind (it did: test_the_server_exits_when_the_build_dies). Ignored,
        not blocked: blocking is per thread, and numpy's and torch's threads would
        still take the signal for the process. Nor does it rely on an exception
        reaching the top: one raised by a signal handler inside a finalizer is
        printed and dropped (torch's ``_del_library`` dropped one during imports).
        """
        if os.getpid() != self.server_pid:  # a kernel, signalled before its resets ran
            signal.signal(signum or signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signum or signal.SIGTERM)
            os._exit(1)
        for signum_ in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum_, signal.SIG_IGN)
        if self.shutting_down:  # a signal that was already on its way
            return
        self.shutting_down = True
        try:
            for pid in list(self.kernels):
                self._kill(pid)
            for pid in list(self.kernels):
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)
            # The build may be gone: tidy its folder (socket and lock) for it.
            shutil.rmtree(os.path.dirname(self.socket_path), ignore_errors=True)
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)

    # -- the forked child -----------------------------------------------------

    def _become_kernel(self, conn: socket.socket, fds: list[int], request: dict) -> None:
        code = 1
        try:
            die_with_parent(signal.SIGKILL, self.server_pid)
            os.setpgid(0, 0)
            # Become the launcher's kernel (or the page's runner): its stdio,
            # folder, environment, argv.
            for target, fd in enumerate(fds[:3]):
                os.dup2(fd, target)
                if fd > 2:
                    os.close(fd)
            os.chdir(request["cwd"])
            os.environ.clear()
            os.environ.update(request["env"])
            sys.argv = list(request["argv"])
            # Then undo what the server was, and what forking from it shares.
            for reset in RESETS.values():
                reset(self, conn)
            if request.get("kind") == "page":
                import page_runner

                page_runner.main(fds[3], request["cells"])
            else:
                import page_kernel

                page_kernel.main()
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (exit_.code is not None)
        except BaseException:
            traceback.print_exc()
        finally:
            try:
                atexit._run_exitfuncs()  # what interpreter exit would run
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)


# -- what a forked kernel undoes -------------------------------------------------
# A kernel forked from the server starts as a copy of it. Each entry undoes one
# thing a plain kernel, started from cold, would not have; they run in this order,
# in the child, after it has taken the launcher's stdio, folder and environment.
# Add an entry here when the server sets up, or preloads, something new.


def _reset_signals(server: Server, conn: socket.socket) -> None:
    """The server's handlers (shutdown, SIGCHLD) and wakeup fd: Python's defaults.

    Runs first: until it has, a SIGTERM would run the server's shutdown here
    (which then exits at once, as it is not the server).
    """
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _close_server_files(server: Server, conn: socket.socket) -> None:
    """The listener, the selector, every launcher's socket, the wake pipe and the
    build's lock: a kernel holding the lock would keep the folder 'in use'."""
    server.selector.close()
    server.listener.close()
    for launcher in server.kernels.values():
        launcher.close()
    conn.close()
    os.close(server.wake_r)
    os.close(server.wake_w)
    os.close(server.lock_fd)


def _reseed_random_generators(server: Server, conn: socket.socket) -> None:
    """torch and numpy seed their global generators from the OS at import, so
    every fork would share the server's seed; a fresh process gets a fresh one.
    (Python's random reseeds itself at fork.)"""
    sys.modules["torch"].default_generator.seed()
    sys.modules["numpy"].random.seed()


def _tell_ipykernel_its_parent(server: Server, conn: socket.socket) -> None:
    """ipykernel reads JPY_PARENT_PID when it is imported, which here was before
    the launcher's environment arrived; without it the kernel prints a console
    banner into the build log."""
    from ipykernel.kernelapp import IPKernelApp

    IPKernelApp.instance(parent_handle=int(os.environ.get("JPY_PARENT_PID") or 0))


RESETS = {
    "signal handlers": _reset_signals,
    "server's files": _close_server_files,
    "random seeds": _reseed_random_generators,
    "ipykernel's parent": _tell_ipykernel_its_parent,
}


def report(status_fd: int, state: str) -> None:
    """Tell the build how far the server is; a build that is gone cannot hear it."""
    with contextlib.suppress(OSError):
        os.write(status_fd, f"{state}\n".encode())


def main() -> None:
    socket_path, listener_fd, parent_pid, status_fd, lock_fd = (
        sys.argv[1],
        *map(int, sys.argv[2:6]),
    )
    server = Server(socket_path, listener_fd, lock_fd)
    signal.signal(signal.SIGTERM, server.shutdown)
    signal.signal(signal.SIGINT, server.shutdown)
    try:
        die_with_parent(signal.SIGTERM, parent_pid)
        report(status_fd, "importing")  # from here on, the build's death stops us
        preload()
        report(status_fd, "ready")
        os.close(status_fd)
        server.serve()
    except BaseException:  # a bug, or torch missing: still tidy up
        traceback.print_exc()
    server.shutdown(code=1)


if __name__ == "__main__":
    main()

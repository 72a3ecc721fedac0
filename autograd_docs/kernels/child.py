"""What a child of the fork server does, from the moment ``server.py`` forks it
until it exits: take the client's stdio, folder and environment, undo what it
inherited from the server (``RESETS``, one entry per thing), then run a Jupyter
kernel (``page_kernel.main``) or a page (``page_runner.main``), as the request's
``kind`` says (``wire.py``).

Imported by ``server.py`` as its neighbour, never by the build.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import signal
import socket
import sys
import traceback
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from autograd_docs.kernels import wire
    from autograd_docs.kernels.server import Server
else:
    import wire

HERE = os.path.dirname(os.path.abspath(__file__))

PR_SET_PDEATHSIG = 1


def die_with_parent(signum: int, parent_pid: int) -> None:
    """Ask Linux to send ``signum`` to this process when its parent exits."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the server's stdin closing does the same job
    if os.getppid() != parent_pid:  # the parent exited before prctl took effect
        os.kill(os.getpid(), signum)


def become(server: Server, conn: socket.socket, fds: list[int], request: dict) -> None:
    """Become the child ``request`` asks for; never returns."""
    code = 1
    try:
        die_with_parent(signal.SIGKILL, server.server_pid)
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
            reset(server, conn)
        if request["kind"] == wire.PAGE:
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


def _forget_the_servers_folder(server: Server, conn: socket.socket) -> None:
    """The server runs as a script, so its folder is first on ``sys.path``: a
    page importing, say, a package named ``wire`` must not get the server's."""
    sys.path[:] = [path for path in sys.path if os.path.abspath(path or ".") != HERE]


RESETS = {
    "signal handlers": _reset_signals,
    "server's files": _close_server_files,
    "random seeds": _reseed_random_generators,
    "ipykernel's parent": _tell_ipykernel_its_parent,
    "the server's folder on sys.path": _forget_the_servers_folder,
}

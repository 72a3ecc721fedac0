"""What a page's process does with its request (``wire.PAGE``), from the moment
it exists until it exits: take the build's stdio, folder and environment, undo
what it inherited (``RESETS``, one entry per thing), then run the page
(``page_runner.main``).

The process is a child ``server.py`` forked, which undoes every entry, or a
cold process ``cold.py`` started for the page alone, which inherited nothing
but its script's folder on ``sys.path``. Imported by both as their neighbour,
never by the build.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import os
import signal
import socket
import sys
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from autograd_docs.kernels.server import Server

HERE = os.path.dirname(os.path.abspath(__file__))


def _private_hooks():
    """``_compat/process.py``, where the private hooks of this process (CPython's,
    IPython's, ipykernel's) are kept with the engine's others, loaded from its
    file: importing it as ``autograd_docs._compat.process`` would import the
    ``_compat`` package, and Sphinx with it, into every page's process."""
    path = os.path.join(os.path.dirname(HERE), "_compat", "process.py")
    spec = importlib.util.spec_from_file_location("process", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


process = _private_hooks()  # also page_runner's, in a page's process

PR_SET_PDEATHSIG = 1


def die_with_parent(signum: int, parent_pid: int) -> None:
    """Ask Linux to send ``signum`` to this process when its parent exits."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the server's stdin closing does the same job
    if os.getppid() != parent_pid:  # the parent exited before prctl took effect
        os.kill(os.getpid(), signum)


def become(
    request: dict, fds: list[int], parent_pid: int, resets: list[Callable[[], None]]
) -> NoReturn:
    """Become the page's process ``request`` asks for, taking ``fds`` (stdin,
    stdout, stderr, the page's results socket) and dying with ``parent_pid``;
    ``resets`` undo what it inherited. Never returns."""
    code = 1
    try:
        die_with_parent(signal.SIGKILL, parent_pid)
        for target, fd in enumerate(fds[:3]):
            os.dup2(fd, target)
            if fd > 2:
                os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = list(request["argv"])
        import page_runner  # before the resets take this folder off sys.path

        for reset in resets:
            reset()
        page_runner.main(fds[3], request["cells"])
        code = 0
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else (exit_.code is not None)
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            process.run_exit_functions()  # what interpreter exit would run
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def forked(server: Server, conn: socket.socket, fds: list[int], request: dict) -> NoReturn:
    """In a child the server just forked: its own process group, then ``become``
    the page's process with every entry of ``RESETS``."""
    os.setpgid(0, 0)
    become(
        request,
        fds,
        server.server_pid,
        [functools.partial(reset, server, conn) for reset in RESETS.values()],
    )


# -- what a forked page undoes ---------------------------------------------------
# A page forked from the server starts as a copy of it. Each entry undoes one
# thing a cold process (``cold.py``) would not have; they run in this order,
# in the child, after it has taken the build's stdio, folder and environment.
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
    """The listener, the selector, every client's socket, the wake pipe and the
    build's lock: a page holding the lock would keep the folder 'in use'."""
    server.selector.close()
    server.listener.close()
    for client in server.children.values():
        client.close()
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


def forget_this_folder() -> None:
    """The server (and ``cold.py``) run as scripts, so this folder is first on
    ``sys.path``: a page importing, say, a package named ``wire`` must not get
    the server's."""
    sys.path[:] = [path for path in sys.path if os.path.abspath(path or ".") != HERE]


RESETS = {
    "signal handlers": _reset_signals,
    "server's files": _close_server_files,
    "random seeds": _reseed_random_generators,
    "the server's folder on sys.path": lambda server, conn: forget_this_folder(),
}

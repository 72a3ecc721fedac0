"""A fork server that outlives the build: the next build of the same site uses it.

An author's rebuild after an edit executes one page in a fraction of a second,
but a new server takes seconds to import torch. So a build leaves its server
running, idle, for ``autograd_docs_server_idle`` seconds, and the next build of
the same site finds it and forks its pages from it. Each page is still a fresh
process forked from the server's untouched state, as within one build.

How a build knows the server is the right one, and that nobody else uses it:

* **Where.** One folder per site and user, ``<temp>/autograd-docs-kernels-warm-
  <uid>-<site>``, created mode 0700; a folder that is a symlink, another user's
  or open to others is never used (``NotOurs``: the build starts a server of its
  own, as without this module). Only the folder's owner can reach the socket.
* **Who.** The server answers only processes of its own user (``SO_PEERCRED``),
  and the build checks the server's user the same way before asking.
* **What.** The build asks the server for its fingerprint (``wire.HELLO``): the
  interpreter, every installed package's version, the engine's and the
  snippets' source, and the environment the server started with (the
  variables its imports read, ``READ_AT_IMPORT``). Another
  fingerprint (an upgrade, an edited snippet) and the build stops that server
  (``wire.STOP``) and starts one for itself.
* **When.** Builds find, start and stop the server under a lock beside its
  folder; the server takes the same lock before it exits for being idle, so it
  never exits between a build's question and that build's first page.

The server exits after ``idle`` seconds with no request and no child, removing
its folder; ``make clean`` and the end of ``make livehtml`` (``python -m
autograd_docs.kernels stop``) stop it at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import stat
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from autograd_docs.execution import cache_key
from autograd_docs.kernels import start_lock, wire
from autograd_docs.kernels.environment import MATPLOTLIBRC
from autograd_docs.kernels.fork_server import FOLDER_PREFIX, ForkServer, remove_stale_folders

SOCKET = "server.sock"
HELLO_TIMEOUT = 120  # seconds: a server still importing answers once it is ready
STOP_TIMEOUT = 15


# Variables Python, torch, numpy and matplotlib read as they start or import
# (PYTHONPATH, PYTORCH_*, OMP_NUM_THREADS, MPLBACKEND, ...): the server read them
# once, so a build with others needs a server of its own.
READ_AT_IMPORT = (
    "PYTHON",
    "TORCH",
    "PYTORCH",
    "OMP_",
    "MKL_",
    "OPENBLAS_",
    "KMP_",
    "CUDA",
    "MPL",
    "NUMPY",
)


class NotOurs(Exception):
    """The warm server's folder or socket cannot be trusted; say why."""


def fingerprint(environment: dict[str, str], snippets: Path | None) -> str:
    """What a warm server must share with the build that uses it. Not the
    commit's time (SOURCE_DATE_EPOCH): each page reads it from the environment
    its request carries, so a commit need not restart the server."""
    started_with = {k: v for k, v in environment.items() if k != "SOURCE_DATE_EPOCH"}
    # What the server's imports read from the build's environment as they run.
    read_at_import = {k: v for k, v in os.environ.items() if k.startswith(READ_AT_IMPORT)}
    parts = [
        sys.executable,
        str(wire.VERSION),
        json.dumps(started_with, sort_keys=True),
        json.dumps(read_at_import, sort_keys=True),
        cache_key.environment_fingerprint(),
        *(path.read_text(encoding="utf8") for path in cache_key.engine_files()),
        MATPLOTLIBRC.read_text(encoding="utf8"),  # read as the server imports matplotlib
    ]
    if snippets is not None:
        parts += [path.read_text(encoding="utf8") for path in sorted(snippets.glob("*.py"))]
    return cache_key.digest(parts)


def folder_of(site: Path) -> Path:
    """The warm server's folder for the site whose conf.py is in ``site``."""
    name = cache_key.digest([str(site.resolve())])[:12]
    return Path(tempfile.gettempdir()) / f"{FOLDER_PREFIX}warm-{os.getuid()}-{name}"


def socket_for(environment: dict[str, str], site: Path, idle: float, snippets: Path | None) -> str:
    """The socket of a warm server for this build: the running one if its
    fingerprint is this build's, else a new one (stopping the old)."""
    folder = folder_of(site)
    ours = fingerprint(environment, snippets)
    with _starting(folder):
        found = _hello(folder)
        if found is not None and found[0] == ours:
            return str(folder / SOCKET)
        if found is not None:
            _stop(folder, found[1])
        remove_stale_folders()  # the folder of a server that died unannounced
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            raise NotOurs(f"{folder} is in use, and its server does not answer") from None
        try:
            server = ForkServer(environment, folder=str(folder), idle=idle, fingerprint=ours)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)  # not left to block the next build
            raise
        server.release()
        return server.socket_path


def stop(site: Path) -> int | None:
    """Stop the site's warm server, if one runs; its pid."""
    folder = folder_of(site)
    with _starting(folder):
        found = _hello(folder)
        if found is not None:
            _stop(folder, found[1])
        return found[1] if found else None


@contextlib.contextmanager
def _starting(folder: Path) -> Iterator[None]:
    """Hold the lock under which builds find, start and stop the server; remove
    it after if no server is left to guard."""
    fd = start_lock.hold(str(folder))
    assert fd is not None  # blocking
    try:
        info = os.fstat(fd)
        if info.st_uid != os.getuid() or info.st_mode & 0o077:
            raise NotOurs(f"{start_lock.path(str(folder))} is another user's or open to others")
        yield
    finally:
        if os.path.lexists(folder):
            os.close(fd)
        else:
            start_lock.drop(str(folder), fd)


def _trusted(folder: Path) -> bool:
    """Whether ``folder`` is there, and ours alone; ``NotOurs`` if it is there but not."""
    try:
        info = folder.lstat()
    except FileNotFoundError:
        return False
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise NotOurs(f"{folder} is a symlink, another user's, or open to others")
    return True


def _connect(folder: Path) -> socket.socket | None:
    if not _trusted(folder):
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(HELLO_TIMEOUT)
    try:
        conn.connect(str(folder / SOCKET))
    except OSError:
        conn.close()
        return None  # no server (it died): remove_stale_folders tidies up
    if wire.peer_uid(conn) != os.getuid():
        conn.close()
        raise NotOurs(f"the server at {folder / SOCKET} runs as another user")
    return conn


def _hello(folder: Path) -> tuple[str, int] | None:
    """The server's fingerprint and pid, or None if no server answers."""
    conn = _connect(folder)
    if conn is None:
        return None
    with conn:
        try:
            wire.send_request(conn, wire.HELLO, [])
            line = conn.makefile("rb").readline()
        except OSError:
            return None
    return wire.read_hello(line) if line else None


def _stop(folder: Path, pid: int) -> None:
    """Ask the server to exit, and wait until it has removed its folder."""
    conn = _connect(folder)
    if conn is not None:
        with conn, contextlib.suppress(OSError):
            wire.send_request(conn, wire.STOP, [])
            conn.recv(1)  # until it hangs up
    deadline = time.monotonic() + STOP_TIMEOUT
    while folder.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    if folder.exists():
        raise NotOurs(f"the server {pid} at {folder} did not stop when asked")


def main() -> None:
    """``python -m autograd_docs.kernels stop [SITE]`` (``__main__.py``)."""
    if sys.argv[1:2] != ["stop"]:
        sys.exit("usage: python -m autograd_docs.kernels stop [SITE]")
    site = Path(sys.argv[2] if len(sys.argv) > 2 else ".")
    pid = stop(site)
    if pid is not None:
        print(f"stopped the warm fork server (pid {pid})")

"""The build's handle on the fork server (``server.py``): start it, wait for it,
stop it, and tidy up after builds that could not.

The server gets a folder of its own in the temp folder, holding its socket and
a lock (``flock``) that the build, its parallel readers and the server hold for
as long as any of them lives. The server is stopped when the build finishes,
and at interpreter exit if the build fails or is interrupted; it also exits on
its own when the build process dies, removing the folder as it goes. Should
both die at once (SIGKILL to both, a machine that loses power), the folder
stays; the next build removes it, once its lock proves that nothing holds it any
more.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograd_docs.kernels import start_lock, wire

HERE = Path(__file__).parent
FOLDER_PREFIX = "autograd-docs-kernels-"  # in the temp folder, one per build
LOCK = "build.lock"  # locked (flock) for as long as the build or its server lives


def unavailable_reason() -> str | None:
    """Why a server cannot fork pages on this machine, or None if it can."""
    if not sys.platform.startswith("linux"):
        return f"forking pages from a warm server is only done on Linux, not {sys.platform}"
    if not hasattr(os, "fork") or not hasattr(socket, "send_fds"):
        return "this Python cannot fork or pass file descriptors"
    return None


def _locked_lock_file(folder: str) -> int:
    """Create ``folder``'s lock file, already locked: it is written under another
    name and renamed, so no one ever finds it unlocked while this process lives."""
    draft = os.path.join(folder, LOCK + ".new")
    fd = os.open(draft, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.rename(draft, os.path.join(folder, LOCK))
    return fd


def remove_stale_folders(temp: str | None = None) -> list[Path]:
    """Remove the folders of builds that are over, and only those: the ones whose
    lock nothing holds. The lock is held by the build, its parallel readers and
    its fork server, and released by the kernel the moment the last of them
    exits, however it exits. A folder without a lock (a build that is only now
    creating it, or an older build's) proves nothing and is left alone; so is
    any folder that is not ours. Age is never a reason.
    """
    removed = []
    for folder in Path(temp or tempfile.gettempdir()).glob(FOLDER_PREFIX + "*"):
        try:
            if folder.is_symlink() or folder.lstat().st_uid != os.getuid():
                continue
            fd = os.open(folder / LOCK, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # held: a live build's folder
        shutil.rmtree(folder, ignore_errors=True)  # still holding it, so no one else acts
        os.close(fd)
        removed.append(folder)
    _remove_orphaned_start_locks(Path(temp or tempfile.gettempdir()))
    return removed


def _remove_orphaned_start_locks(temp: Path) -> None:
    """The start locks of warm servers that died unannounced: no folder beside
    them, and nobody holding them."""
    for lock in temp.glob(FOLDER_PREFIX + "*.starting"):
        folder = str(lock)[: -len(".starting")]
        try:
            if os.path.lexists(folder) or lock.is_symlink() or lock.lstat().st_uid != os.getuid():
                continue
            fd = start_lock.hold(folder, blocking=False)
            if fd is not None:
                if os.path.lexists(folder):
                    os.close(fd)
                else:
                    start_lock.drop(folder, fd)
        except OSError:
            continue  # removed meanwhile, or not ours to touch


class ForkServer:
    """The server process, owned by the process that started it; or, started
    with an ``idle`` time in a ``folder`` of ``warm_server``'s, a warm server
    that owns itself (``release`` it, never ``stop`` it)."""

    def __init__(
        self,
        environment: dict[str, str] | None = None,
        *,
        folder: str | None = None,
        idle: float = 0,
        fingerprint: str = "",
    ) -> None:
        if folder is None:
            remove_stale_folders()
            folder = tempfile.mkdtemp(prefix=FOLDER_PREFIX)
        self.folder = folder
        self.socket_path = os.path.join(self.folder, "server.sock")
        self.owner = os.getpid()
        self.lock = _locked_lock_file(self.folder)
        self.states: list[str] = []  # what the server has reported, in order
        self._status_buffer = b""
        # Listen here, before the server has even started Python: a page
        # that connects while the server still imports torch waits in the
        # backlog instead of finding no socket.
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.socket_path)
        listener.listen(64)
        self._status, status_w = os.pipe()
        # A warm server keeps none of the build's files open (its stdin, the
        # build log): it writes to a log in its folder.
        log = (
            os.open(os.path.join(folder, "server.log"), os.O_WRONLY | os.O_CREAT, 0o600)
            if idle
            else None
        )
        try:
            self.process = subprocess.Popen(
                wire.server_argv(
                    sys.executable,
                    str(HERE / "server.py"),
                    self.socket_path,
                    listener=listener.fileno(),
                    parent=os.getpid(),
                    status=status_w,
                    lock=self.lock,
                    idle=idle,
                    fingerprint=fingerprint,
                ),
                pass_fds=[listener.fileno(), status_w, self.lock],
                # The build's stdin closes when the build dies: the server exits.
                stdin=subprocess.DEVNULL if idle else subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=log if idle else None,
                start_new_session=True,  # Ctrl-C reaches the build, which stops us
                env={**os.environ, **(environment or {})},
            )
        finally:
            listener.close()
            os.close(status_w)
            if log is not None:
                os.close(log)

    def wait_until(self, state: str, timeout: float = 300) -> None:
        """Block until the server has reported ``state``: ``wire.IMPORTING`` (it
        watches its parent) or ``wire.READY`` (its imports are done).

        The build never waits (a page that connects early waits in the
        socket's backlog); tests do, instead of guessing how long imports take.
        """
        deadline = time.monotonic() + timeout
        while state not in self.states:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(
                    f"the fork server did not report {state!r} in "
                    f"{timeout} s (it reported {self.states})"
                )
            if not select.select([self._status], [], [], remaining)[0]:
                continue
            data = os.read(self._status, 4096)
            if not data:
                raise RuntimeError(
                    f"the fork server exited ({self.process.poll()}) before it reported {state!r}"
                )
            self._status_buffer += data
            *lines, self._status_buffer = self._status_buffer.split(b"\n")
            self.states += [line.decode() for line in lines]

    def release(self) -> None:
        """Let go of a warm server: it holds its folder's lock, and lives on."""
        for fd in (self._status, self.lock):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._status = self.lock = -1

    def stop(self) -> None:
        if os.getpid() != self.owner:
            return  # a forked reader: the server is not ours to stop
        if self.process.poll() is None:
            self.process.terminate()  # it kills and reaps its children
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        assert self.process.stdin is not None  # Popen(stdin=PIPE)
        self.process.stdin.close()
        shutil.rmtree(self.folder, ignore_errors=True)  # the server removes it first
        self.release()  # last, the lock: the folder is gone before anyone may take it

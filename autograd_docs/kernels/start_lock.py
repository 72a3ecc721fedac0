"""The lock under which builds find, start and stop a warm fork server, and under
which the server decides to exit for being idle: so it never exits between a
build's question and that build's first page (``warm_server.py``).

Standard library only: ``server.py`` imports it by bare name, as its neighbour.
"""

from __future__ import annotations

import fcntl
import os


def path(folder: str) -> str:
    """The file a warm server's builds and the server itself lock (``flock``) while
    one of them starts, finds or stops it: beside its folder, which comes and goes."""
    return folder.rstrip("/") + ".starting"


def hold(folder: str, blocking: bool = True) -> int | None:
    """Lock ``path(folder)``; its descriptor, or None if not ``blocking`` and
    someone holds it. Whoever holds it may remove the file (``drop``):
    a lock taken on a file since removed is let go and taken again."""
    lock = path(folder)
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            if os.fstat(fd).st_ino == os.stat(lock).st_ino:
                return fd
        except BlockingIOError:
            os.close(fd)
            return None  # held, and we may not wait
        except FileNotFoundError:
            pass  # removed while we waited
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # a lock on a removed file guards nothing: take the new one


def drop(folder: str, fd: int) -> None:
    """Remove the start lock of a server that is gone, then let go of it."""
    try:
        os.unlink(path(folder))
    finally:
        os.close(fd)

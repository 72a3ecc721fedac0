"""How the build, the fork server and a page's process talk: the one
definition, used by every side.

Standard library only: the server, ``cold.py`` and the page's process import it
as a plain script's neighbour (``wire``), the build as
``autograd_docs.kernels.wire``.

The build starts the server with ``server_argv`` and reads its progress, one
word per line, on a pipe (``IMPORTING``, then ``READY``). A server started with
an idle time outlives the build that started it (a warm server): later builds
find it by its folder, ask who it is (``HELLO``: its fingerprint and pid) and
use it if the fingerprint is theirs, or ask it to ``STOP``, under a lock beside
its folder (``start_lock.py``). Only the server's own user is answered (``peer_uid``).

The build's ``page_client`` connects to the server's unix socket (or to a
``cold.py`` it started for the page alone) and sends one request
(``send_request``): in one message, the request's length and the descriptors
the page's process takes (stdin, stdout, stderr, and the socket its messages go
to), then the request itself as JSON. The server answers with JSON lines on the
same socket: first the child's pid, or a refusal; last the child's exit status
(its code, or minus the signal that killed it). A cold process answers the pid
line only; its exit status is its own.

A page's child sends its messages to the build as JSON lines too
(``page_message``): each tagged with the cell whose request it answers, and a
last ``done`` line.

Every request carries ``VERSION``: a request the server cannot read, or of another
version, is refused with a reason, and the client raises ``WireError`` with it instead
of falling back to a slower way, so a disagreement fails the build where it happens.
"""

from __future__ import annotations

import json
import os
import socket
import struct
from typing import NamedTuple

VERSION = 2  # bump on any change to what is below

# The server's progress, on its status pipe.
IMPORTING, READY = "importing", "ready"

# What a request asks for: a child (what it becomes), or something of the server.
PAGE = "page"  # a page's process (page_runner.py), for page_client
HELLO = "hello"  # the server's fingerprint and pid, nothing forked
STOP = "stop"  # the server exits, as at SIGTERM
# The descriptors each passes: stdin, stdout, stderr, the page's results socket.
DESCRIPTORS = {PAGE: 4, HELLO: 0, STOP: 0}
MAX_DESCRIPTORS = max(DESCRIPTORS.values())

# A page's messages: the cell of the kernel-info reply, and the last line's.
KERNEL_INFO = -1
DONE = -2
CHANNELS = ("shell", "iopub", "done")

_LENGTH = struct.Struct("!I")
_CREDS = struct.Struct("3i")  # struct ucred: pid, uid, gid


class WireError(Exception):
    """The two sides disagree about the protocol, or one broke it."""


def server_argv(
    python: str,
    script: str,
    socket_path: str,
    *,
    listener: int,
    parent: int,
    status: int,
    lock: int,
    idle: float = 0,
    fingerprint: str = "",
) -> list[str]:
    """The server's command line: its socket, the descriptors it inherits (the
    bound listener, the status pipe's write end, the build's lock), the build's
    pid, which it watches, and for a warm server the seconds it may stay idle
    (0: it lives and dies with the build) and its fingerprint."""
    numbers = (listener, parent, status, lock, idle)
    return [python, script, socket_path, *map(str, numbers), fingerprint]


class ServerArgs(NamedTuple):
    socket_path: str
    listener: int
    parent: int
    status: int
    lock: int
    idle: float
    fingerprint: str


def read_server_argv(argv: list[str]) -> ServerArgs:
    """``server_argv``'s arguments (``sys.argv[1:]``), read back."""
    if len(argv) != 7:
        raise WireError(f"the server takes 7 arguments (server_argv), not {len(argv)}: {argv}")
    listener, parent, status, lock = map(int, argv[1:5])
    return ServerArgs(argv[0], listener, parent, status, lock, float(argv[5]), argv[6])


def peer_uid(conn: socket.socket) -> int:
    """The user id of the process at the other end of a unix socket."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _CREDS.size)
    return _CREDS.unpack(creds)[1]


def send_request(
    server: socket.socket,
    kind: str,
    fds: list[int],
    *,
    argv: list[str] | None = None,
    cwd: str | None = None,
    env: dict[str, str] | None = None,
    cells: list[dict] | None = None,
) -> None:
    """Ask the server for ``kind``; for a page, a child that takes ``fds`` and
    runs ``cells`` with ``argv``, ``cwd`` and ``env``."""
    if len(fds) != DESCRIPTORS[kind]:
        raise WireError(f"a {kind} request passes {DESCRIPTORS[kind]} descriptors, not {len(fds)}")
    request: dict = {"version": VERSION, "kind": kind}
    if kind == PAGE:
        request.update(argv=argv, cwd=cwd, env=env, cells=cells)
    body = json.dumps(request).encode()
    if fds:
        socket.send_fds(server, [_LENGTH.pack(len(body))], fds)
        server.sendall(body)
    else:
        server.sendall(_LENGTH.pack(len(body)) + body)


def receive_request(conn: socket.socket) -> tuple[dict, list[int]]:
    """The server's side of ``send_request``: the request and the descriptors.

    Raises ``WireError`` (having closed the descriptors) for a request of another
    version or shape, ``ConnectionError`` if the client hung up mid-request."""
    header, fds, _, _ = socket.recv_fds(conn, _LENGTH.size, MAX_DESCRIPTORS)
    try:
        header += _recv_exactly(conn, _LENGTH.size - len(header))
        body = _recv_exactly(conn, _LENGTH.unpack(header)[0])
        try:
            request = json.loads(body)
        except ValueError as error:
            raise WireError(f"a request that is not JSON ({error}): {body[:200]!r}") from None
        _check_request(request, fds)
    except BaseException:
        _close(fds)
        raise
    return request, fds


def _strings(value) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


# What each field of a request that forks a child must be.
_FIELDS = {
    "argv": _strings,
    "cwd": lambda value: isinstance(value, str),
    "env": lambda value: isinstance(value, dict) and _strings([*value, *value.values()]),
    "cells": lambda value: (
        isinstance(value, list)
        and all(
            isinstance(cell, dict)
            and isinstance(cell.get("source"), str)
            and isinstance(cell.get("stop_on_error"), bool)
            for cell in value
        )
    ),
}


def _check_request(request, fds: list[int]) -> None:
    if not isinstance(request, dict) or request.get("version") != VERSION:
        version = request.get("version") if isinstance(request, dict) else None
        raise WireError(f"request of wire version {version!r}; this server speaks {VERSION}")
    kind = request.get("kind")
    if not isinstance(kind, str) or kind not in DESCRIPTORS:
        raise WireError(f"unknown request kind {kind!r} (known: {', '.join(DESCRIPTORS)})")
    if len(fds) != DESCRIPTORS[kind]:
        raise WireError(f"a {kind} request passes {DESCRIPTORS[kind]} descriptors, got {len(fds)}")
    if kind != PAGE:
        return
    for name in _FIELDS:
        if name not in request:
            raise WireError(f"a {kind} request without {name}")
        if not _FIELDS[name](request[name]):
            raise WireError(f"a {kind} request whose {name} is not what wire.py says")


def _recv_exactly(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the client hung up mid-request")
        data += chunk
    return data


def _close(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


# -- the server's replies ---------------------------------------------------------


def pid_line(pid: int) -> bytes:
    return _line({"pid": pid})


def refusal_line(reason: str) -> bytes:
    return _line({"refused": reason, "version": VERSION})


def status_line(status: int) -> bytes:
    return _line({"status": status})


def hello_line(fingerprint: str, pid: int) -> bytes:
    return _line({"fingerprint": fingerprint, "pid": pid})


def read_hello(line: bytes) -> tuple[str, int]:
    """``(fingerprint, pid)`` from the server's answer to ``HELLO``."""
    reply = _parse(line, "hello")
    if "refused" in reply:
        raise WireError(f"the fork server refused the request: {reply['refused']}")
    if not isinstance(reply.get("fingerprint"), str) or not isinstance(reply.get("pid"), int):
        raise WireError(f"the fork server's hello has no fingerprint and pid: {reply}")
    return reply["fingerprint"], reply["pid"]


def read_pid(line: bytes) -> int:
    """The child's pid from the server's first reply; ``WireError`` with the
    server's reason if it refused the request."""
    reply = _parse(line, "first reply")
    if "refused" in reply:
        raise WireError(f"the fork server refused the request: {reply['refused']}")
    if not isinstance(reply.get("pid"), int):
        raise WireError(f"the fork server's first reply has no pid: {reply}")
    return reply["pid"]


def read_status(line: bytes) -> int:
    """The child's exit status from the server's last reply."""
    reply = _parse(line, "last reply")
    if not isinstance(reply.get("status"), int):
        raise WireError(f"the fork server's last reply has no status: {reply}")
    return reply["status"]


# -- a page's messages ------------------------------------------------------------


def page_message(cell: int, channel: str, msg: dict, default=None) -> bytes:
    """One message of a page's child, tagged with its cell (``default``
    serialises what JSON cannot: jupyter_client's dates)."""
    return (
        json.dumps({"cell": cell, "channel": channel, "msg": msg}, default=default).encode() + b"\n"
    )


def read_page_message(line: bytes) -> tuple[int, str, dict]:
    """``(cell, channel, msg)`` from one of ``page_message``'s lines."""
    record = _parse(line, "page message")
    msg = record.get("msg")
    if (
        record.get("channel") not in CHANNELS
        or not isinstance(record.get("cell"), int)
        or not isinstance(msg, dict)
        or (record["channel"] != "done" and not isinstance(msg.get("parent_header"), dict))
    ):
        raise WireError(f"a page's child sent a message of no known shape: {line[:200]!r}")
    return record["cell"], record["channel"], msg


def _line(obj: dict) -> bytes:
    return json.dumps(obj).encode() + b"\n"


def _parse(line: bytes, what: str) -> dict:
    try:
        parsed = json.loads(line)
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise WireError(f"the fork server's {what} is not a JSON object: {line[:200]!r}")
    return parsed

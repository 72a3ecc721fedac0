"""The fork server's wire (autograd_docs/kernels/wire.py): what each side sends
is what the other reads, and a disagreement fails loudly, never by quietly
running the page a slower way."""

import os
import socket
from pathlib import Path

import nbclient
import nbformat
import pytest
from jupyter_core.utils import run_sync

from autograd_docs.kernels import fork_server, page_client, page_messages, wire
from autograd_docs.kernels.environment import kernel_environment

ROOT = Path(__file__).resolve().parent.parent


def sent(kind: str, fds: list[int], **fields) -> tuple[dict, list[int]]:
    """What the server reads of a request sent with ``wire.send_request``."""
    client, server = socket.socketpair()
    with client, server:
        wire.send_request(client, kind, fds, **fields)
        request, received = wire.receive_request(server)
    for fd in received:
        os.close(fd)
    return request, received


def raw(body: bytes, fds: list[int]) -> socket.socket:
    """A socket the server end of which holds a hand-made request."""
    client, server = socket.socketpair()
    socket.send_fds(client, [len(body).to_bytes(4, "big")], fds)
    client.sendall(body)
    client.close()
    return server


FIELDS = {"argv": ["page_runner.py"], "cwd": "/", "env": {"A": "1"}}


def test_a_request_arrives_as_it_was_sent():
    cells = [{"source": "1", "stop_on_error": True}]
    request, fds = sent(wire.PAGE, [0, 1, 2, 2], cells=cells, **FIELDS)
    assert request == {"version": wire.VERSION, "kind": wire.PAGE, "cells": cells, **FIELDS}
    assert len(fds) == 4
    request, fds = sent(wire.HELLO, [])
    assert request == {"version": wire.VERSION, "kind": wire.HELLO} and fds == []


@pytest.mark.parametrize("body, fds, says", [
    (b'{"version": 0, "kind": "page", "argv": [], "cwd": "/", "env": {}, "cells": []}', 4,
     "wire version 0"),
    (b'{"version": 2, "kind": "kernel", "argv": [], "cwd": "/", "env": {}}', 3,
     "unknown request kind 'kernel'"),
    (b'{"version": 2, "kind": "page", "argv": [], "cwd": "/", "env": {}, "cells": []}', 3,
     "passes 4 descriptors, got 3"),
    (b'{"version": 2, "kind": "page", "argv": [], "cwd": "/", "env": {}}', 4,
     "without cells"),
    (b"not json", 3, "not JSON"),
    (b'{"version": 2, "kind": ["page"], "argv": [], "cwd": "/", "env": {}}', 3,
     "unknown request kind"),
    (b'{"version": 2, "kind": "page", "argv": "x", "cwd": "/", "env": {}, "cells": []}', 4,
     "argv is not"),
    (b'{"version": 2, "kind": "page", "argv": [], "cwd": "/", "env": {"A": 1}, "cells": []}', 4,
     "env is not"),
    (b'{"version": 2, "kind": "page", "argv": [], "cwd": "/", "env": {}, "cells": [{}]}', 4,
     "cells is not"),
])
def test_a_request_the_server_cannot_read_is_refused_with_the_reason(body, fds, says):
    with raw(body, [0, 1, 2, 2][:fds]) as server, pytest.raises(wire.WireError, match=says):
        wire.receive_request(server)


def test_the_replies_read_back_and_a_refusal_raises():
    assert wire.read_pid(wire.pid_line(42)) == 42
    assert wire.read_status(wire.status_line(-9)) == -9
    with pytest.raises(wire.WireError, match="refused the request: too old"):
        wire.read_pid(wire.refusal_line("too old"))
    with pytest.raises(wire.WireError, match="not a JSON object"):
        wire.read_pid(b"[1]\n")
    msg = {"parent_header": {}, "content": {}}
    assert wire.read_page_message(wire.page_message(3, "iopub", msg)) == (3, "iopub", msg)
    with pytest.raises(wire.WireError, match="no known shape"):
        wire.read_page_message(b'{"cell": 0, "channel": "control", "msg": {}}')


def test_a_page_message_of_no_known_shape_fails_the_page_at_once():
    """Not a cell that times out a minute later: asyncio would log and drop the
    error if the reader raised it where it reads."""
    build_end, child_end = socket.socketpair()
    reader = page_messages.PageMessages(build_end)
    child_end.sendall(b'{"cell": 0, "channel": "iopub", "msg": {"no": "header"}}\n'
                      + wire.page_message(0, "shell", {"parent_header": {}}))

    async def first_reply():
        return await reader.next("shell", 30)

    with pytest.raises(wire.WireError, match="no known shape"):
        run_sync(first_reply)()  # as nbclient runs its reads, whatever loop a test left
    child_end.close()
    build_end.close()


def test_the_server_reads_its_command_line_as_the_build_writes_it():
    argv = wire.server_argv("python", "server.py", "/s", listener=3, parent=7, status=4, lock=5,
                            idle=2.5, fingerprint="f")
    assert wire.read_server_argv(argv[2:]) == ("/s", 3, 7, 4, 5, 2.5, "f")
    with pytest.raises(wire.WireError, match="7 arguments"):
        wire.read_server_argv(argv[2:-1])


@pytest.fixture(scope="module")
def server():
    if fork_server.unavailable_reason():
        pytest.skip(fork_server.unavailable_reason())
    server = fork_server.ForkServer(kernel_environment(ROOT))
    server.wait_until(wire.READY)
    yield server
    server.stop()


def test_a_page_the_server_refuses_fails_the_page_instead_of_running_it_slowly(
        server, tmp_path, monkeypatch):
    page = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(1)")])
    env = {**os.environ, **kernel_environment(ROOT)}
    monkeypatch.setattr(wire, "VERSION", wire.VERSION + 1)  # this build speaks another
    with pytest.raises(wire.WireError, match=f"wire version {wire.VERSION}"):
        page_client.execute_page(nbclient.execute, page, server.socket_path, env,
                                   cwd=str(tmp_path), timeout=60)
    monkeypatch.undo()
    ran = page_client.execute_page(nbclient.execute, page, server.socket_path, env,
                                     cwd=str(tmp_path), timeout=60)
    assert ran.cells[0].outputs[0].text == "1\n", "the server serves on after a refusal"

"""``make livehtml`` driven from outside: started on a free port, fetched, stopped.

The one driver of the live preview for ``make bench`` and the tests. The port is
probed free and then released, so another process can take it before the server
(after its first build) binds it: then the server exits saying so, and is
started again on another port. The server runs in a process group of its own,
which ``stop`` ends whole: make, sphinx-autobuild and the Sphinx under it.
"""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from autograd_docs.devkit.builds import make_command, make_env

BIND_FAILED = "address already in use"  # uvicorn's words when the port is taken


class LivehtmlError(Exception):
    """The server did not serve: the message says why and ends with its log."""


def free_port() -> int:
    """A port free now; the server binds it later, so it may be taken by then."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def fetch(url: str, timeout: float = 10) -> tuple[int, str]:
    """(HTTP status, body); (0 or the error's status, "") when nothing came."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read().decode("utf8")
    except (OSError, http.client.HTTPException) as error:
        # refused while starting, an HTTP error, or a page cut short because a
        # rebuild replaced it while it was being served
        return getattr(error, "code", 0), ""


def start(
    folder: Path,
    page_url: str,
    log: Path,
    *,
    serves: Callable[[int, str], bool],
    deadline: float,
    venv: Path | str = ".venv",
    attempts: int = 5,
    poll: float = 0.25,
) -> tuple[subprocess.Popen, str]:
    """``make livehtml`` in ``folder``, once ``serves(status, body)`` holds for the
    page at ``page_url`` (e.g. ``test-page.html``): (the server, the page's url).

    ``deadline`` is a ``time.monotonic()`` time; the server's output goes to ``log``.
    Raises ``LivehtmlError`` if the server exits or the deadline passes first.
    """
    for _ in range(attempts):
        port = free_port()
        url = f"http://127.0.0.1:{port}/{page_url}"
        with open(log, "w") as out:
            server = subprocess.Popen(
                make_command("livehtml", venv),
                cwd=folder,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**make_env(), "PORT": str(port), "PYTHONUNBUFFERED": "1"},
                start_new_session=True,  # its own process group, to stop it whole
            )
        while time.monotonic() < deadline:
            if server.poll() is not None:
                break
            # Our page, not another server's on a port taken meanwhile.
            if serves(*fetch(url)):
                return server, url
            time.sleep(poll)
        else:
            stop(server)
            raise LivehtmlError(
                f"timed out waiting for the first page; server log:\n{log.read_text()}"
            )
        stop(server)
        if BIND_FAILED not in log.read_text().lower():
            raise LivehtmlError(f"the server exited before serving; its log:\n{log.read_text()}")
    raise LivehtmlError(f"no free port in {attempts} attempts; last log:\n{log.read_text()}")


def stop(leader: subprocess.Popen, grace: float = 20) -> None:
    """Stop every process in ``leader``'s group: politely, then for good."""
    try:
        os.killpg(leader.pid, signal.SIGTERM)
    except ProcessLookupError:
        leader.wait()
        return  # the group is gone already
    end = time.monotonic() + grace
    while time.monotonic() < end:
        leader.poll()  # reap make once it has exited; the server takes a moment
        try:
            os.killpg(leader.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.killpg(leader.pid, signal.SIGKILL)
    leader.wait(timeout=grace)

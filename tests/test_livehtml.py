"""The live preview survives an author's mistake and shows the fix.

``make livehtml`` runs in a copy of the small site on a free loopback port (if
another process takes the port before the server binds it, the server is
started again on another). The
test saves a broken cell into a page, checks that the server keeps serving and
that its log names the error, saves the fix, and checks the page shows the new
output. It stops the server's whole process group, whatever happens.
"""

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from autograd_docs.build_log import problems

from site_copy import write

pytestmark = pytest.mark.build

DEADLINE = 240  # seconds for the whole test; each step waits for at most this
BROKEN = "print(z.grad)\nraise ValueError('saved half-way through an edit')\n"
FIXED = "print(z.grad)\nprint('the fix is live')\n"


BIND_FAILED = "address already in use"  # uvicorn's words when the port is taken
ATTEMPTS = 5
PAGE_TITLE = "Check a gradient the build re-computes"  # small_site/test-page.md


def free_port() -> int:
    """A port free now; the server binds it later, so it may be taken by then."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode("utf8")
    except (OSError, http.client.HTTPException) as error:
        # refused while starting, an HTTP error, or a page cut short because a
        # rebuild replaced it while it was being served
        return getattr(error, "code", 0), ""


def wait_for(condition, what: str, deadline: float, log: Path, server):
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        if server.poll() is not None:
            pytest.fail(f"the server exited while waiting for {what}; its log:\n"
                        f"{log.read_text()}")
        time.sleep(0.25)
    pytest.fail(f"timed out waiting for {what}; server log:\n{log.read_text()}")


def start_livehtml(folder: Path, log: Path, deadline: float):
    """``make livehtml`` serving ``folder``'s test page: (server, page url).

    The port is probed free and then released, so another process can take it
    before the server (after its first build) binds it: then the server exits
    saying so, and is started again on another port.
    """
    venv = Path(sys.prefix)
    for _ in range(ATTEMPTS):
        port = free_port()
        url = f"http://127.0.0.1:{port}/test-page.html"
        with open(log, "w") as out:
            server = subprocess.Popen(
                # -o: the venv is installed already; never let make reinstall it.
                ["make", "livehtml", f"VENV={venv}", "-o", str(venv / ".installed")],
                cwd=folder, stdout=out, stderr=subprocess.STDOUT,
                env={**os.environ, "PORT": str(port), "NO_COLOR": "1",
                     "PYTHONUNBUFFERED": "1"},
                start_new_session=True,  # its own process group, to stop it whole
            )
        while time.monotonic() < deadline:
            if server.poll() is not None:
                break
            # Our page, not another server's on a port taken meanwhile.
            status, body = fetch(url)
            if status == 200 and PAGE_TITLE in body:
                return server, url
            time.sleep(0.25)
        else:
            stop_group(server)
            pytest.fail(f"timed out waiting for the first page; server log:\n{log.read_text()}")
        stop_group(server)
        if BIND_FAILED not in log.read_text().lower():
            pytest.fail(f"the server exited before serving; its log:\n{log.read_text()}")
    pytest.fail(f"no free port in {ATTEMPTS} attempts; last log:\n{log.read_text()}")


def test_livehtml_survives_a_broken_cell_and_shows_the_fix(warm_copy):
    log = warm_copy / "livehtml.log"
    page = warm_copy / "docs" / "test-page.md"
    source = page.read_text(encoding="utf8")
    deadline = time.monotonic() + DEADLINE
    server, url = start_livehtml(warm_copy, log, deadline)
    try:
        write(page, source.replace("print(z.grad)\n", BROKEN))
        error = "cell raised ValueError: saved half-way through an edit"
        wait_for(lambda: error in log.read_text(), "the log to name the error",
                 deadline, log, server)
        wait_for(lambda: "build " in log.read_text().rsplit(error, 1)[1],
                 "the broken build to end", deadline, log, server)
        print(next(line for line in log.read_text().splitlines() if error in line))
        # Without -W too, the build ends by listing its problems.
        assert any(error in problem for problem in problems(log.read_text())), (
            log.read_text())
        status, _ = fetch(url)
        assert status == 200, "the server stopped serving after a broken cell"
        assert server.poll() is None, "the server exited after a broken cell"

        write(page, source.replace("print(z.grad)\n", FIXED))
        wait_for(lambda: "the fix is live" in fetch(url)[1], "the fixed output",
                 deadline, log, server)
    finally:
        stop_group(server)
    with pytest.raises(ProcessLookupError):
        os.killpg(server.pid, 0)  # nothing of the server is left


def stop_group(leader: subprocess.Popen, grace: float = 20) -> None:
    """Stop every process in ``leader``'s group: politely, then for good."""
    os.killpg(leader.pid, signal.SIGTERM)
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

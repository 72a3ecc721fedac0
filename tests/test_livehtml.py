"""The live preview survives an author's mistake and shows the fix.

``make livehtml`` runs in a copy of the small site on a free loopback port (if
another process takes the port before the server binds it, the server is
started again on another). The
test saves a broken cell into a page, checks that the server keeps serving and
that its log names the error, saves the fix, and checks the page shows the new
output, forked from a fork server that stays warm while the preview lives and
stops with it. It stops the server's whole process group, whatever happens.
"""

import os
import sys
import time
from pathlib import Path

import pytest

from autograd_docs.build_log import problems
from autograd_docs.devkit import livehtml
from autograd_docs.devkit.builds import write
from autograd_docs.kernels import IDLE_SWITCH, warm_server

pytestmark = pytest.mark.build

DEADLINE = 240  # seconds for the whole test; each step waits for at most this
BROKEN = "print(z.grad)\nraise ValueError('saved half-way through an edit')\n"
FIXED = "print(z.grad)\nprint('the fix is live')\n"
PAGE_TITLE = "Check a gradient the build re-computes"  # small_site/test-page.md


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
    """``make livehtml`` serving ``folder``'s test page: (server, page url)."""
    try:
        return livehtml.start(
            folder, "test-page.html", log, deadline=deadline, venv=Path(sys.prefix),
            # Our page, not another server's on a port taken meanwhile.
            serves=lambda status, body: status == 200 and PAGE_TITLE in body)
    except livehtml.LivehtmlError as error:
        pytest.fail(str(error))


def test_livehtml_survives_a_broken_cell_and_shows_the_fix(warm_copy, monkeypatch):
    # As an author runs it: the fork server stays warm while the preview lives.
    monkeypatch.delenv(IDLE_SWITCH, raising=False)
    warm = warm_server.folder_of(warm_copy)
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
        status, _ = livehtml.fetch(url)
        assert status == 200, "the server stopped serving after a broken cell"
        assert server.poll() is None, "the server exited after a broken cell"

        write(page, source.replace("print(z.grad)\n", FIXED))
        wait_for(lambda: "the fix is live" in livehtml.fetch(url)[1], "the fixed output",
                 deadline, log, server)
        assert (warm / "server.sock").exists(), "the pages were forked from a warm server"
    finally:
        livehtml.stop(server)
    with pytest.raises(ProcessLookupError):
        os.killpg(server.pid, 0)  # nothing of the server is left
    assert not warm.exists(), "the warm fork server stopped with the preview"

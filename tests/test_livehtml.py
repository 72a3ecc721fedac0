"""The live preview survives an author's mistake and shows the fix.

``make livehtml`` runs in a copy of the small site on a free loopback port (if
another process takes the port before the server binds it, the server is
started again on another). The
test saves a broken cell into a page, checks that the server keeps serving and
that its log names the error, saves the fix, and checks the page shows the new
output, forked from a fork server that stays warm while the preview lives and
stops with it, each rebuild run in a fork of the preview's warm process
(``warm_autobuild``; the tests below check the fork, the cold rebuild once a file
imported ahead has changed, and the hand-over from sphinx-autobuild). It stops the
server's whole process group, whatever happens.
"""

import importlib
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from autograd_docs.build_log import problems
from autograd_docs.devkit import livehtml, warm_autobuild
from autograd_docs.devkit.builds import write
from autograd_docs.kernels import warm_server
from autograd_docs.settings import IDLE_SWITCH

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
        said = log.read_text()
        assert f"{warm_autobuild.SAYS} each rebuild forks this process" in said, said
        # The first build, the broken one and the fix: each in a fork.
        assert said.count(f"{warm_autobuild.SAYS} rebuilding in a fork") >= 3, said
        assert "changed since the preview started" not in said, said
    finally:
        livehtml.stop(server)
    with pytest.raises(ProcessLookupError):
        os.killpg(server.pid, 0)  # nothing of the server is left
    assert not warm.exists(), "the warm fork server stopped with the preview"


# -- The rebuilds forked from a process that imported Sphinx once (warm_autobuild) --

def test_a_rebuild_runs_sphinx_in_a_fork_of_the_preview_process(tmp_path, monkeypatch):
    seen = tmp_path / "seen"

    def main(arguments):  # stands in for sphinx.cmd.build.main, in the fork
        seen.write_text(f"{os.getpid()} {os.getppid()} {' '.join(arguments)}")
        return 3

    monkeypatch.setattr("sphinx.cmd.build.main", main)
    warm = warm_autobuild.WarmSphinx(warm_autobuild.modification_times())
    assert warm(["build", "-b", "html"]) == 3, "the fork's exit code is the build's"
    pid, parent, arguments = seen.read_text().split(" ", 2)
    assert int(parent) == os.getpid() != int(pid), "a child of this process ran it"
    assert arguments == "build -b html"


def test_ctrl_c_stops_a_forked_rebuild_though_the_server_only_notes_it(tmp_path, monkeypatch):
    """uvicorn's SIGINT handler only sets a flag; the fork must not inherit it."""
    started = tmp_path / "started"

    def main(arguments):  # a slow build, in the fork
        started.write_text(str(os.getpid()))
        time.sleep(60)
        return 0

    monkeypatch.setattr("sphinx.cmd.build.main", main)
    before = signal.signal(signal.SIGINT, lambda *_: None)  # as uvicorn's: noted, not acted on

    def interrupt():
        while not started.exists() or not started.read_text():
            time.sleep(0.05)
        os.kill(int(started.read_text()), signal.SIGINT)

    threading.Thread(target=interrupt, daemon=True).start()
    begun = time.monotonic()
    try:
        code = warm_autobuild.WarmSphinx(warm_autobuild.modification_times())(["build"])
    finally:
        signal.signal(signal.SIGINT, before)
    assert code == 130 and time.monotonic() - begun < 30, code


def test_a_file_changed_since_the_start_makes_the_rebuild_cold_and_says_so(
        tmp_path, monkeypatch, capsys):
    (tmp_path / "engine_part.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("engine_part")
    warm = warm_autobuild.WarmSphinx(warm_autobuild.modification_times())
    os.utime(tmp_path / "engine_part.py", ns=(1, 1))
    ran = []
    monkeypatch.setattr(subprocess, "run", lambda command: ran.append(command) or
                        subprocess.CompletedProcess(command, 0))
    assert warm(["build", "-b", "html"]) == 0
    assert ran == [[sys.executable, "-m", "sphinx", "build", "-b", "html"]]
    said = capsys.readouterr().out
    assert "engine_part.py changed since the preview started" in said
    assert "restart `make livehtml`" in said


def test_the_extensions_conf_py_lists_are_read_not_run(tmp_path):
    conf = tmp_path / "conf.py"
    conf.write_text("raise SystemExit('run')\nextensions = ['a', 'b.c']\n")
    assert warm_autobuild.conf_extensions(conf) == ["a", "b.c"]
    conf.write_text("extensions = list(['computed'])\n")
    assert warm_autobuild.conf_extensions(conf) == []
    real = warm_autobuild.conf_extensions(Path(__file__).parents[1] / "conf.py")
    assert "autograd_docs" in real


def test_sphinx_autobuild_hands_its_sphinx_command_over_and_runs_the_rest(monkeypatch):
    from autograd_docs._compat import autobuild

    given = []
    shim = autobuild._Subprocess(lambda arguments: given.append(arguments) or 2)
    with pytest.raises(subprocess.CalledProcessError):
        shim.run([sys.executable, "-m", "sphinx", "build", "docs", "out"], check=True)
    assert given == [["build", "docs", "out"]]
    assert shim.run([sys.executable, "-c", "pass"], check=True).returncode == 0
    assert given == [["build", "docs", "out"]], "a pre- or post-build command runs as it is"

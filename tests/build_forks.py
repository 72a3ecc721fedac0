"""The small site's builds, each forked from one process that imported Sphinx once.

``make html`` in a copy starts ``python -m sphinx``, which spends about 1.3 s
importing Sphinx, myst-nb and the site's extensions before it reads a page; the
suite builds copies about forty times. Here one process per pytest worker
imports all that once (``warm_autobuild.import_ahead``, what ``make livehtml``
imports) and each build runs Sphinx's own command line in a fork of it
(``warm_autobuild._build_here``, as a ``make livehtml`` rebuild does). Each build
is still a new process, and nothing of an earlier one remains in it: the
process that forks only imports, it never builds.

What runs is what ``make`` runs: the Makefile's recipe, read with ``make -n``
in the copy (its flags, ``JOBS``, ``O``, ``BUILDDIR``), and the log is what
``make`` prints: the Sphinx command line, Sphinx's output, the recipe's echo
after a success; a failed recipe exits 2, as ``make`` does (without ``make``'s
own last line, ``make: *** [Makefile:N: html] Error 1``). The contract that
``make html`` itself builds the copy is the shared build's (``conftest.built_copy``
builds through ``make``). A module file imported ahead that changed since
(the engine edited mid-session) makes the fork run ``python -m sphinx`` instead.

    python tests/build_forks.py serve   (one JSON request a line on stdin)
"""

from __future__ import annotations

import atexit
import json
import os
import select
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


# -- the server: imports once, forks a build per request ------------------------------

def _build(request: dict, imported: dict[str, int]) -> None:
    """In the child: become ``python -m sphinx <arguments>`` in the request's folder."""
    from autograd_docs.devkit import warm_autobuild

    os.setsid()  # a process group of its own, killed whole on a timeout
    os.chdir(request["folder"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    command = [sys.executable, "-m", "sphinx", *request["arguments"]]
    if warm_autobuild.changed_since(imported) is not None:
        os.execv(sys.executable, command)  # never returns
    from importlib.util import find_spec  # importing sphinx.__main__ would run it

    sys.argv = [find_spec("sphinx.__main__").origin, *request["arguments"]]
    sys.path[0] = request["folder"]  # as `python -m` puts the working folder first
    warm_autobuild._build_here(request["arguments"], announce=False)  # never returns


def serve() -> None:
    from autograd_docs.devkit import warm_autobuild

    imported = warm_autobuild.import_ahead(ROOT / "conf.py")
    answers = sys.stdout
    print("ready", file=answers, flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        answers.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            try:
                _build(request, imported)
            finally:
                os._exit(1)  # only if the child could not become the build
        print(json.dumps({"pid": pid}), file=answers, flush=True)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}),
              file=answers, flush=True)


# -- the client: what site_copy.build calls --------------------------------------------

_server: subprocess.Popen | None = None


def _started() -> subprocess.Popen:
    global _server
    if _server is None or _server.poll() is not None:
        _server = subprocess.Popen(
            [sys.executable, __file__, "serve"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, cwd=ROOT)
        atexit.register(_server.kill)
        ready = _server.stdout.readline()
        assert ready == "ready\n", f"the build-forking process did not start: {ready!r}"
    return _server


def _answer(server: subprocess.Popen, deadline: float | None) -> dict:
    if deadline is not None:
        ready, _, _ = select.select([server.stdout], [], [], max(0, deadline - time.monotonic()))
        if not ready:
            raise TimeoutError
    line = server.stdout.readline()
    assert line, "the build-forking process ended"
    return json.loads(line)


def recipe(folder: Path, make_command: list[str], env: dict[str, str]) -> tuple[list[str], list[str]]:
    """The Sphinx arguments of the recipe ``make_command`` runs in ``folder``, and the
    commands after it (the recipe's echo), read with ``make -n``."""
    lines = subprocess.run([*make_command, "-n"], cwd=folder, env=env, capture_output=True,
                           text=True, check=True).stdout.splitlines()
    python, dash_m, module, *arguments = shlex.split(lines[0])
    assert (python, dash_m, module) == (sys.executable, "-m", "sphinx"), (
        f"the recipe no longer starts with this venv's `python -m sphinx`: {lines[0]!r}; "
        "update tests/build_forks.py")
    assert all(line.startswith("echo ") for line in lines[1:]), (
        f"the recipe runs more than Sphinx and an echo: {lines}; update tests/build_forks.py")
    return [lines[0], *arguments], lines[1:]


def make(folder: Path, target: str = "html", *variables: str, venv: Path | str = ".venv",
         env: dict[str, str | None] | None = None, timeout: float | None = None):
    """``autograd_docs.devkit.builds.make``, the Sphinx part forked (see above)."""
    from autograd_docs.devkit.builds import Build, make_command, make_env

    start = time.monotonic()
    environment = {k: v for k, v in {**make_env(), **(env or {})}.items() if v is not None}
    (echoed, *arguments), after = recipe(folder, make_command(target, str(venv), *variables),
                                         environment)
    server = _started()
    with tempfile.NamedTemporaryFile("r", encoding="utf8", suffix=".log") as log:
        server.stdin.write(json.dumps({"folder": str(Path(folder).resolve()),
                                       "arguments": arguments, "env": environment,
                                       "log": log.name}) + "\n")
        server.stdin.flush()
        pid = _answer(server, None)["pid"]
        try:
            returncode = _answer(server, None if timeout is None else start + timeout)
        except TimeoutError:
            os.killpg(pid, signal.SIGKILL)  # the build and what it started
            _answer(server, None)
            raise subprocess.TimeoutExpired(echoed, timeout) from None
        returncode = returncode["returncode"]
        output = log.read()
    output = f"{echoed}\n{output}"
    if returncode == 0:
        for line in after:
            output += subprocess.run(line, shell=True, cwd=folder, capture_output=True,
                                     text=True).stdout
    return Build(returncode and 2, output, time.monotonic() - start)


if __name__ == "__main__":
    command, *arguments = sys.argv[1:]
    {"serve": serve}[command](*arguments)

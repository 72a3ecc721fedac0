"""The one owner of the ``python3`` kernelspec, of the fork server's life, and of
how a page is executed.

Every page runs in a process forked from a warm server, not started from cold.
When the build is about to read pages, this extension starts ``server.py``
(which imports torch, numpy, matplotlib and ipykernel once, and runs nothing
else). For each page, jupyter-cache's ``executenb`` (wrapped here) asks the
server for a child that runs the page's cells itself with ipykernel's shell
(``page_runner.py``) and streams the messages back; nbclient turns them into the
notebook through ``page_client.py``'s stand-in kernel manager, with no kernel
protocol in between. Every page still runs in its own process.

The ``python3`` kernelspec is written once too, and is what runs a page when
the runner cannot: its command is ``launcher.py``, a standard-library-only
command that asks the server to fork a fresh Jupyter kernel for the page and
stands in for it (signals in, exit status out), or ``page_kernel.py`` itself
when the server is off. It is named ``python3`` so that the downloadable
notebooks name the kernel readers have.

The server is stopped when the build finishes, and at interpreter exit if the
build fails or is interrupted; it also exits on its own when the build process
dies, removing the build's folder (its socket) as it goes. Should both die at
once (SIGKILL to both, a machine that loses power), the folder stays; the next
build removes it, once its lock proves that nothing holds it any more. Parallel
readers (``-j``) are forked after the server starts and share it.

Set ``AUTOGRAD_DOCS_KERNEL_PROTOCOL=1`` to run pages in forked Jupyter kernels
instead (the way before the runner, and its oracle in tests), and
``AUTOGRAD_DOCS_FORK_SERVER=0`` to run plain kernels. Where fork is not
available (not Linux), the build says so once and runs plain kernels.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging

from autograd_docs import _compat
from autograd_docs._compat import config_value_at_setup
from autograd_docs.kernels.environment import kernel_environment
from autograd_docs.kernels.page_client import ServerUnreachable, execute_forked

logger = logging.getLogger(__name__)

HERE = Path(__file__).parent
ENV_SWITCH = "AUTOGRAD_DOCS_FORK_SERVER"
# =1: pages run in Jupyter kernels forked from the server, over the kernel
# protocol (the path before page_runner.py; bench compares the two).
PROTOCOL_SWITCH = "AUTOGRAD_DOCS_KERNEL_PROTOCOL"
FOLDER_PREFIX = "autograd-docs-kernels-"  # in the temp folder, one per build
LOCK = "build.lock"  # locked (flock) for as long as the build or its server lives


def unavailable_reason() -> str | None:
    """Why the fork server cannot be used here, or None if it can."""
    if os.environ.get(ENV_SWITCH, "1") == "0":
        return f"{ENV_SWITCH}=0"
    if not sys.platform.startswith("linux"):
        return f"forking a warm kernel is only done on Linux, not {sys.platform}"
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
    return removed


class ForkServer:
    """The server process, owned by the process that started it."""

    def __init__(self, environment: dict[str, str] | None = None) -> None:
        remove_stale_folders()
        self.folder = tempfile.mkdtemp(prefix=FOLDER_PREFIX)
        self.socket_path = os.path.join(self.folder, "server.sock")
        self.owner = os.getpid()
        self.lock = _locked_lock_file(self.folder)
        self.states: list[str] = []  # what the server has reported, in order
        self._status_buffer = b""
        # Listen here, before the server has even started Python: a launcher
        # that connects while the server still imports torch waits in the
        # backlog instead of finding no socket.
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.socket_path)
        listener.listen(64)
        self._status, status_w = os.pipe()
        try:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    str(HERE / "server.py"),
                    self.socket_path,
                    str(listener.fileno()),
                    str(os.getpid()),
                    str(status_w),
                    str(self.lock),
                ],
                pass_fds=[listener.fileno(), status_w, self.lock],
                stdin=subprocess.PIPE,  # closes when this process dies: the server exits
                stdout=subprocess.DEVNULL,
                start_new_session=True,  # Ctrl-C reaches the build, which stops us
                env={**os.environ, **(environment or {})},
            )
        finally:
            listener.close()
            os.close(status_w)

    def wait_until(self, state: str, timeout: float = 300) -> None:
        """Block until the server has reported ``state``: ``"importing"`` (it
        watches its parent) or ``"ready"`` (its imports are done).

        The build never waits (a launcher that connects early waits in the
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

    def stop(self) -> None:
        if os.getpid() != self.owner:
            return  # a forked reader: the server is not ours to stop
        if self.process.poll() is None:
            self.process.terminate()  # it kills and reaps its kernels
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        assert self.process.stdin is not None  # Popen(stdin=PIPE)
        self.process.stdin.close()
        shutil.rmtree(self.folder, ignore_errors=True)  # the server removes it first
        # Last, the lock: the folder is gone before anyone may take it.
        for fd in (self._status, self.lock):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._status = self.lock = -1  # a second stop closes nothing


_server: ForkServer | None = None
# Set before parallel readers fork, when pages run in forked children without
# a kernel: the server's socket and the kernelspec's environment.
_forked_pages: tuple[str, dict[str, str]] | None = None


def kernelspec_file(app: Sphinx) -> Path:
    """Where the build's ``python3`` kernelspec lives (searched via JUPYTER_PATH)."""
    return Path(app.doctreedir) / "jupyter" / "kernels" / "python3" / "kernel.json"


def plain_kernel_argv() -> list[str]:
    return [sys.executable, str(HERE / "page_kernel.py"), "-f", "{connection_file}"]


def launcher_argv(socket_path: str) -> list[str]:
    # -I -S: no site-packages, no user paths: the launcher needs only the stdlib.
    return [
        sys.executable,
        "-I",
        "-S",
        str(HERE / "launcher.py"),
        socket_path,
        "-f",
        "{connection_file}",
    ]


def _start_server(app: Sphinx) -> ForkServer:
    global _server
    if _server is None:
        _server = ForkServer(kernel_environment(Path(app.confdir)))
        atexit.register(_stop_server)
    return _server


def _sources_changed(app: Sphinx) -> bool:
    """A cheap guess at whether this build will read pages: no saved environment,
    or a page, snippet or conf.py newer than it."""
    saved = Path(app.doctreedir) / "environment.pickle"
    if not saved.exists():
        return True
    since = saved.stat().st_mtime
    snippets = config_value_at_setup(app.config, "autograd_docs_snippets_dir")
    candidates = [Path(app.confdir) / "conf.py", *Path(app.srcdir).rglob("*.md")]
    if snippets:
        candidates += Path(snippets).glob("*.py")
    return any(path.stat().st_mtime > since for path in candidates)


def _start_early(app: Sphinx) -> None:
    """Start the server while Sphinx is still loading, if pages will be read.

    The server's imports then overlap the import of the other extensions
    (myst-nb alone takes a second). If the guess says nothing changed, the
    server waits until Sphinx knows it has pages to read (``_install_kernelspec``): a
    no-change rebuild never starts it.
    """
    mode = config_value_at_setup(app.config, "nb_execution_mode", "auto")
    if mode != "off" and unavailable_reason() is None and _sources_changed(app):
        _start_server(app)


def _install_kernelspec(app: Sphinx, env, docnames: list[str]) -> None:
    """Before pages are read: write the ``python3`` kernelspec, once, with the
    command that will run them (the launcher if the server is up).

    JUPYTER_PATH is searched before the venv's own kernelspecs, and kernels
    started by parallel readers inherit it.
    """
    if not docnames or app.config.nb_execution_mode == "off":
        return
    environment = kernel_environment(Path(app.confdir))
    reason = unavailable_reason()
    if reason:
        logger.info(
            f"fork server off ({reason}): each page starts its own kernel and imports torch itself"
        )
        argv = plain_kernel_argv()
    else:
        global _forked_pages
        server = _start_server(app)
        argv = launcher_argv(server.socket_path)
        if os.environ.get(PROTOCOL_SWITCH) != "1":
            _forked_pages = (server.socket_path, environment)
    spec = {
        "argv": argv,
        "display_name": "Python 3 (ipykernel)",
        "language": "python",
        "env": environment,
    }
    spec_file = kernelspec_file(app)
    spec_file.parent.mkdir(parents=True, exist_ok=True)
    spec_file.write_text(json.dumps(spec, indent=1), encoding="utf8")
    kernels = str(spec_file.parent.parent.parent)
    if kernels not in os.environ.get("JUPYTER_PATH", "").split(os.pathsep):
        os.environ["JUPYTER_PATH"] = os.pathsep.join(
            filter(None, [kernels, os.environ.get("JUPYTER_PATH")])
        )


def _execute_page(original):
    """Wrap jupyter-cache's ``executenb``: run the page in a child forked for it
    (``page_runner.py``), nbclient driving it through ``ForkedPageManager``;
    through the kernelspec's kernel when the server is off or unreachable."""

    def executenb(notebook, cwd=None, **kwargs):
        if _forked_pages is not None:
            socket_path, spec_environment = _forked_pages
            try:
                return execute_forked(
                    original,
                    notebook,
                    socket_path,
                    {**os.environ, **spec_environment},
                    cwd=cwd,
                    **kwargs,
                )
            except ServerUnreachable as error:
                # As the launcher does: the page still runs, and says why it is slow.
                logger.info(
                    f"fork server unreachable ({error}): this page runs in a kernel of its own"
                )
        return original(notebook, cwd=cwd, **kwargs)

    return executenb


def _stop_server(*_args) -> None:
    global _server
    if _server is not None:
        _server.stop()
        if os.getpid() == _server.owner:
            _server = None


def setup(app: Sphinx) -> dict:
    _start_early(app)
    # env-before-read-docs: before parallel readers fork, and only when pages are read.
    app.connect("env-before-read-docs", _install_kernelspec)
    app.connect("build-finished", _stop_server)
    _compat.wrap_executenb(_execute_page)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Fork a fresh process per page, from a process that imported torch once.

Started by the build with ``wire.server_argv``: the build binds the socket and
passes it listening, the write end of a status pipe and its lock on its folder.
On the pipe the server writes ``wire.IMPORTING`` once it watches its parent,
then ``wire.READY`` once its imports are done (``preload.py``), and closes it.

A cold page process spends about a second importing ipykernel and nearly two
importing torch, before running a page whose own code takes a fraction of that.
This server pays both once: it imports torch, numpy, matplotlib and ipykernel,
runs nothing else (no tensor op, no thread pool, no kernel), then waits on a unix
socket. For each page the build's ``page_client.py`` asks for (a request of
``kind: page`` carrying the page's cells and a fourth descriptor, the socket the
child streams its messages to), it forks a child that runs that page: a separate
process, so nothing one page does reaches the next, which starts from the
server's untouched, just-imported state.

Every request and reply is ``wire.py``'s; a request the server cannot read is
refused with the reason, never half-served. The child (``child.py``) takes the
client's stdin, stdout and stderr, working folder, environment and arguments,
undoes what it inherited from the server (``child.RESETS``), and runs
``page_runner.main()``, as ``cold.py`` does in a process started cold.

The server exits when it gets SIGTERM or SIGINT, when its parent (the Sphinx
build) exits, or when its stdin closes, and always the same way (``shutdown``):
signals ignored, every child it forked killed, the build's folder removed. A
warm server (started with an idle time) watches no build: it exits when asked
to (``wire.STOP``), or when it has had no request and no child for that long,
so that the next builds of the same site use it while it lives.
"""

import contextlib
import os
import selectors
import shutil
import signal
import socket
import sys
import time
import traceback

# This script's neighbours (sys.path[0] is its folder): the protocol, what a
# child does, what the server imports before forking.
TYPE_CHECKING = False  # typing's, without importing typing (mypy reads it the same)
if TYPE_CHECKING:
    from autograd_docs.kernels import child, start_lock, wire
    from autograd_docs.kernels.preload import preload
else:
    import child
    import start_lock
    import wire
    from preload import preload


class Server:
    def __init__(
        self, socket_path: str, listener_fd: int, lock_fd: int, idle: float, fingerprint: str
    ):
        self.socket_path = socket_path
        self.lock_fd = lock_fd  # held, not used: the build's folder is in use
        self.idle = idle  # seconds without requests or children before exiting; 0: never
        self.fingerprint = fingerprint  # what the build that started it computed
        self.last_active = time.monotonic()
        self.folder = os.path.dirname(socket_path)
        self.exit_lock: int | None = None  # the start lock, held while it exits for being idle
        self.server_pid = os.getpid()
        self.selector = selectors.DefaultSelector()
        self.listener = socket.socket(fileno=listener_fd)  # bound by the build
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_r, False)
        os.set_blocking(self.wake_w, False)
        self.children: dict[int, socket.socket] = {}  # child pid -> its client's socket
        self.shutting_down = False

    # -- the server process ---------------------------------------------------

    def serve(self) -> None:
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # wake select to reap
        self.selector.register(self.listener, selectors.EVENT_READ, self._accept)
        self.selector.register(self.wake_r, selectors.EVENT_READ, self._reap)
        if not self.idle:  # the build's: its stdin closes when the build ends
            self.selector.register(0, selectors.EVENT_READ, self._parent_input)
        self.last_active = time.monotonic()  # idle from now, not from before the imports
        while True:
            events = self.selector.select(self._until_idle())
            for key, _ in events:
                key.data(key.fileobj)
            if not events and self._idle_for_good():
                self.shutdown()

    def _until_idle(self) -> float | None:
        if not self.idle or self.children:
            return None  # a child's exit wakes the loop (SIGCHLD) and restarts the clock
        if self.exit_lock is not None:
            return 0.0  # exiting: it only waited for the backlog's pages to end
        return max(0.0, self.last_active + self.idle - time.monotonic())

    def _idle_for_good(self) -> bool:
        """Idle for ``idle`` seconds, and no build is finding or starting this
        server (under the lock they take for that). Then its socket goes first:
        a page that connects later finds no server and runs another way, and a
        page already waiting in the backlog is still served before the exit."""
        if not self.idle or self.children or self._until_idle():
            return False
        if self.exit_lock is None:
            lock = start_lock.hold(self.folder, blocking=False)
            if lock is None:  # a build is about to use this server: look again in 1 s
                self.last_active = time.monotonic() - self.idle + 1
                return False
            self.exit_lock = lock  # shutdown removes it, once the folder is gone
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.socket_path)
        waiting = self.selector.select(0)
        for key, _ in waiting:
            key.data(key.fileobj)
        return not waiting

    def _accept(self, listener) -> None:
        conn, _ = listener.accept()
        self.last_active = time.monotonic()
        pid = None
        try:
            conn.settimeout(10)
            try:
                if wire.peer_uid(conn) != os.getuid():
                    raise wire.WireError("a process of another user")
                request, fds = wire.receive_request(conn)
            except wire.WireError as error:
                print(f"fork server: refused a request: {error}", file=sys.stderr)
                conn.sendall(wire.refusal_line(str(error)))
                conn.close()
                return
            if request["kind"] == wire.HELLO:
                conn.sendall(wire.hello_line(self.fingerprint, os.getpid()))
                conn.close()
                return
            if request["kind"] == wire.STOP:
                conn.close()
                self.shutdown()
            try:
                conn.settimeout(None)
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    child.forked(self, conn, fds, request)  # never returns
            finally:
                for fd in fds:
                    os.close(fd)
            self.children[pid] = conn
            try:
                os.setpgid(pid, pid)  # so a forwarded signal finds it at once
            except OSError:
                pass  # the child did it first, or already exited
            conn.sendall(wire.pid_line(pid))
            self.selector.register(conn, selectors.EVENT_READ, self._client_input)
        except (OSError, ValueError):
            # The client hung up: it runs the page cold, or is gone; a child
            # forked for it must not linger.
            traceback.print_exc()
            if pid is not None:
                self._kill(pid)  # reaped, and forgotten, by _reap
            else:
                conn.close()

    def _client_input(self, conn) -> None:
        if conn.fileno() < 0:
            # Its child was reaped, and the socket closed, earlier in the same
            # round of events: a page's build side hangs up as it kills the child.
            return
        try:
            if conn.recv(1):
                return  # clients send nothing after the request; ignore it
        except OSError:
            pass
        # The client is gone (killed): its child must not outlive it.
        self.selector.unregister(conn)
        for pid, client in self.children.items():
            if client is conn:
                self._kill(pid)

    def _reap(self, _fd) -> None:
        try:
            while os.read(self.wake_r, 512):
                pass
        except BlockingIOError:
            pass
        while True:
            try:
                pid, wait_status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            if conn is None:
                continue
            self.last_active = time.monotonic()
            status = (
                -os.WTERMSIG(wait_status)
                if os.WIFSIGNALED(wait_status)
                else os.WEXITSTATUS(wait_status)
            )
            try:
                conn.sendall(wire.status_line(status))
            except OSError:
                pass
            try:
                self.selector.unregister(conn)
            except (KeyError, ValueError):
                pass
            conn.close()

    def _parent_input(self, _fd) -> None:
        if not os.read(0, 512):
            self.shutdown()  # the build closed our stdin: it is over

    @staticmethod
    def _kill(pid: int) -> None:
        for target in (
            lambda: os.killpg(pid, signal.SIGKILL),
            lambda: os.kill(pid, signal.SIGKILL),
        ):
            try:
                target()
                return
            except OSError:
                continue

    def shutdown(self, signum: int | None = None, _frame=None, code: int = 0) -> None:
        """The server's one way out: kill and reap every child, remove the
        build's folder, exit. Never returns.

        It is the SIGTERM and SIGINT handler too, and once started it ignores
        both: the build's death closes our stdin and then sends PDEATHSIG, so the
        signal arrives while shutdown runs for the closed stdin, and a SystemExit
        raised between removing the socket and removing the folder left the
        folder behind (it did: test_the_server_exits_when_the_build_dies). Ignored,
        not blocked: blocking is per thread, and numpy's and torch's threads would
        still take the signal for the process. Nor does it rely on an exception
        reaching the top: one raised by a signal handler inside a finalizer is
        printed and dropped (torch's ``_del_library`` dropped one during imports).
        """
        if os.getpid() != self.server_pid:  # a child, signalled before its resets ran
            signal.signal(signum or signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signum or signal.SIGTERM)
            os._exit(1)
        for signum_ in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum_, signal.SIG_IGN)
        if self.shutting_down:  # a signal that was already on its way
            return
        self.shutting_down = True
        try:
            for pid in list(self.children):
                self._kill(pid)
            for pid in list(self.children):
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)
            # The build may be gone: tidy its folder (socket and lock) for it.
            shutil.rmtree(self.folder, ignore_errors=True)
            if self.exit_lock is not None:
                start_lock.drop(self.folder, self.exit_lock)
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def report(status_fd: int, state: str) -> None:
    """Tell the build how far the server is; a build that is gone cannot hear it."""
    with contextlib.suppress(OSError):
        os.write(status_fd, f"{state}\n".encode())


def main() -> None:
    args = wire.read_server_argv(sys.argv[1:])
    server = Server(args.socket_path, args.listener, args.lock, args.idle, args.fingerprint)
    signal.signal(signal.SIGTERM, server.shutdown)
    signal.signal(signal.SIGINT, server.shutdown)
    try:
        if not args.idle:
            child.die_with_parent(signal.SIGTERM, args.parent)
        report(args.status, wire.IMPORTING)  # from here on, the build's death stops us
        preload()
        report(args.status, wire.READY)
        os.close(args.status)
        server.serve()
    except BaseException:  # a bug, or torch missing: still tidy up
        traceback.print_exc()
    server.shutdown(code=1)


if __name__ == "__main__":
    main()

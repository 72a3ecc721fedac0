"""The command of the ``python3`` kernelspec when the fork server runs.

Usage: ``python -I -S launcher.py SOCKET -f CONNECTION_FILE``.

Standard library only, so it starts in a few milliseconds. It asks the fork
server (``server.py``) listening on SOCKET for a fresh kernel for this
connection file, hands it this process's stdin, stdout, stderr, working folder
and environment, then stands in for that kernel towards the kernel manager:

* SIGINT (an interrupt), SIGTERM, SIGHUP and SIGQUIT are forwarded to the
  kernel's process group;
* when the kernel exits, this process exits the same way (same code, or killed
  by the same signal);
* if this process is killed outright (SIGKILL), the server sees the socket close
  and kills the kernel.

If the server cannot be reached, it runs the plain kernel (``page_kernel.py``)
in its place, so a page never fails because the fast path is gone. If the server
answers but refuses the request (``wire.py``: the two disagree), it says why and
exits with status 1, which the build reports as a dead kernel.
"""

import os
import signal
import socket
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# -I leaves the script's own folder off sys.path; wire.py is all it needs there.
sys.path.append(HERE)
TYPE_CHECKING = False  # typing's, without importing typing (mypy reads it the same)
if TYPE_CHECKING:
    from autograd_docs.kernels import wire
else:
    import wire

PAGE_KERNEL = os.path.join(HERE, "page_kernel.py")
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


class _Kernel:
    """The kernel this process stands in for: its pid once the server has forked
    it, and the signals that arrived before that, to deliver then."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.pending: list[int] = []


def _plain_kernel(kernel_args: list[str], reason: str) -> None:
    print(f"fork_launcher: {reason}; starting a plain kernel", file=sys.stderr)
    os.execv(sys.executable, [sys.executable, PAGE_KERNEL, *kernel_args])


def _standard_fds() -> list[int]:
    fds = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:  # closed: give the kernel /dev/null instead
            fd = os.open(os.devnull, os.O_RDWR)
        fds.append(fd)
    return fds


def main() -> None:
    socket_path, kernel_args = sys.argv[1], sys.argv[2:]
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.connect(socket_path)
    except OSError as error:
        _plain_kernel(kernel_args, f"fork server unreachable ({error})")
    wire.send_request(
        server,
        wire.KERNEL,
        _standard_fds(),
        argv=[PAGE_KERNEL, *kernel_args],
        cwd=os.getcwd(),
        env=dict(os.environ),
    )

    # A signal that arrives before the kernel exists is kept, then delivered.
    kernel = _Kernel()

    def forward(signum, _frame):
        if kernel.pid is None:
            kernel.pending.append(signum)
            return
        try:
            os.killpg(kernel.pid, signum)
        except ProcessLookupError:
            pass

    for signum in FORWARDED:
        signal.signal(signum, forward)

    replies = server.makefile("rb")
    first = replies.readline()
    if not first:
        _plain_kernel(kernel_args, "fork server closed the connection")
    try:
        kernel.pid = wire.read_pid(first)
    except wire.WireError as error:
        print(f"fork_launcher: {error}", file=sys.stderr)
        sys.exit(1)
    for early in kernel.pending:
        forward(early, None)

    last = replies.readline()
    if not last:  # the server died; its kernels die with it
        sys.exit(1)
    status = wire.read_status(last)
    if status < 0:  # killed by a signal: be killed by the same one
        for signum in FORWARDED:
            signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), -status)
    sys.exit(status)


if __name__ == "__main__":
    main()

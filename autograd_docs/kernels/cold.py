"""Run one page in a process started cold, for the build that started it.

Usage: ``python cold.py FD``, FD being one end of a unix socket pair whose other
end the build's ``page_client.py`` holds. The build sends the same request
(``wire.PAGE``: cells, descriptors, folder, environment) it sends the fork
server; this process answers with its pid, as the server does, imports what
the server imports (``preload.py``, in the environment the build started it
with, which is the request's), and becomes the page's process (``child.become``)
with nothing to undo but its own folder on ``sys.path``. So a page runs the same
way where the server cannot fork it (not Linux) or cannot be reached; it only
pays for importing torch itself.
"""

import os
import sys

TYPE_CHECKING = False  # typing's, without importing typing (mypy reads it the same)
if TYPE_CHECKING:
    from autograd_docs.kernels import child, wire
    from autograd_docs.kernels.preload import preload
else:
    import child
    import wire
    from preload import preload


def main() -> None:
    import socket

    conn = socket.socket(fileno=int(sys.argv[1]))
    request, fds = wire.receive_request(conn)
    if request["kind"] != wire.PAGE:
        conn.sendall(wire.refusal_line(f"a cold process runs a page, not {request['kind']!r}"))
        sys.exit(1)
    conn.sendall(wire.pid_line(os.getpid()))
    preload()
    # conn stays open until this process exits: the build reads that as its end.
    child.become(request, fds, os.getppid(), [child.forget_this_folder])


if __name__ == "__main__":
    main()

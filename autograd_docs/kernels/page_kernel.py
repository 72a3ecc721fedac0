"""The Jupyter kernel every page runs in: ipykernel, minus two irrelevant log lines.

A build log must be clean to be useful, so this launcher drops exactly these
records from ipykernel's log, and nothing else:

* the warning, on every start, that TCP traffic is unencrypted: where the
  system has no Unix sockets, the build's kernel manager connects over TCP
  on 127.0.0.1 (``ways.kernel_manager_config``);
* the traceback of a reply that cannot be sent because the build has already
  closed the kernel's sockets: after a cell times out, the build reports the
  timeout and shuts the kernel down, and the interrupted cell's late reply then
  fails (ZMQError) with nobody left to read it.

The kernelspec that runs it is written by ``autograd_docs.kernels``.
"""

import errno
import logging
import sys

import zmq

UNENCRYPTED_TCP_WARNING = "Kernel is running over TCP without encryption"
CLOSED_SOCKET_ERRNOS = {errno.ENOTSOCK, zmq.ETERM}


class _DropIrrelevantRecords(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if UNENCRYPTED_TCP_WARNING in record.getMessage():
            return False
        error = record.exc_info[1] if record.exc_info else None
        return not (isinstance(error, zmq.ZMQError) and error.errno in CLOSED_SOCKET_ERRNOS)


def main() -> None:
    from ipykernel.kernelapp import IPKernelApp

    app = IPKernelApp.instance()
    app.log.addFilter(_DropIrrelevantRecords())
    app.initialize(sys.argv[1:])
    app.start()


if __name__ == "__main__":
    main()

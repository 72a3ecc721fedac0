"""The Jupyter kernel every page runs in: ipykernel, minus one irrelevant warning.

The build's kernel manager always connects over TCP on 127.0.0.1, and ipykernel
warns on every start that such traffic is unencrypted. A build log must be clean
to be useful, so this launcher drops exactly that warning and nothing else.
The kernelspec that runs it is written by ``executed_pages`` at build start.
"""

import logging
import sys

UNENCRYPTED_TCP_WARNING = "Kernel is running over TCP without encryption"


class _DropUnencryptedTcpWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return UNENCRYPTED_TCP_WARNING not in record.getMessage()


def main() -> None:
    from ipykernel.kernelapp import IPKernelApp

    app = IPKernelApp.instance()
    app.log.addFilter(_DropUnencryptedTcpWarning())
    app.initialize(sys.argv[1:])
    app.start()


if __name__ == "__main__":
    main()

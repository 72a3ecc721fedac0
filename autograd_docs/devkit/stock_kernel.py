"""A page run as a reader runs it: in a stock Jupyter kernel (the ``python3``
kernelspec, ipykernel's own), started cold by nbclient. The tests' oracle for
what the build's page runner prints; the build never runs pages this way."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable

from nbformat import NotebookNode
from traitlets.config import Config


def kernel_manager_config(folder: str) -> Config:
    """Reach the kernel over Unix sockets in ``folder``, where the system has
    them. Over TCP, jupyter_client picks free ports and the kernel binds them a
    moment later, and another process can take one in between (a loaded test
    run once failed so: "Address already in use")."""
    if os.name != "posix":
        return Config()
    return Config({"KernelManager": {"transport": "ipc", "ip": os.path.join(folder, "kernel")}})


def run_in_kernel(
    original: Callable, notebook: NotebookNode, cwd: str | None, **kwargs
) -> NotebookNode:
    """Run one page as nbclient's ``execute`` (``original``) does, in a stock
    kernel whose sockets are in a folder of their own, not the page's."""
    with tempfile.TemporaryDirectory(prefix="page-kernel-") as sockets:
        return original(notebook, cwd=cwd, config=kernel_manager_config(sockets), **kwargs)

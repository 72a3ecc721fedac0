"""CPython's, IPython 9.18.1's and ipykernel 7.4.0's private API, as the
processes the engine starts use it: a page's process (``kernels/child.py``,
``kernels/page_runner.py``) and a ``make livehtml`` rebuild forked from the
preview (``devkit/warm_autobuild.py``). See ``autograd_docs._compat``.

Only the standard library is imported here, and IPython and ipykernel when a
hook is called: a page's process loads this file by its path
(``kernels/child.py``), because importing the ``_compat`` package would import
Sphinx into every page.
"""

import atexit
import types


def run_exit_functions() -> None:
    """Run what interpreter exit would run, before ``os._exit`` ends a forked
    process (written against CPython 3.11, the private ``atexit._run_exitfuncs``).
    Retired by a public way to run them (CPython has none)."""
    atexit._run_exitfuncs()


def forget_exit_functions() -> None:
    """Drop the exit functions a forked process inherited, which are its
    parent's (written against CPython 3.11, the private ``atexit._clear``). Retired with
    ``run_exit_functions``."""
    atexit._clear()


def put_working_folder_on_path() -> None:
    """Put the working folder on ``sys.path`` after the standard library, as
    IPython's ``InteractiveShellApp.init_path`` does when a kernel starts: that
    method, called on a stand-in ``self`` (it reads only ``ignore_cwd``), as no
    IPython application exists (IPython 9.18.1, ``core/shellapp.py``). Retired
    by a public function for it in IPython (no upstream issue found)."""
    from IPython.core.shellapp import InteractiveShellApp

    InteractiveShellApp.init_path(types.SimpleNamespace(ignore_cwd=False))  # type: ignore[arg-type]


def capture_descriptor_writes(kernel) -> None:
    """Make the in-process ``kernel``'s ``stdout`` and ``stderr`` capture what C
    code writes to file descriptors 1 and 2 too, as ``IPKernelApp``'s
    ``capture_fd_output`` does for a kernel: its streams replaced by
    ``OutStream(watchfd=True)``, made from its private-by-use ``session`` and
    ``iopub_thread`` (ipykernel 7.4.0, ``inprocess/ipkernel.py``, ``iostream.py``).
    Retired by the in-process kernel taking ``capture_fd_output`` (no upstream
    issue found)."""
    from ipykernel.iostream import OutStream

    for name in ("stdout", "stderr"):
        stream = OutStream(kernel.session, kernel.iopub_thread, name, watchfd=True)
        setattr(kernel, name, stream)

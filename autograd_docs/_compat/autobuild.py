"""sphinx-autobuild's private hook: how a rebuild starts Sphinx.

Written against sphinx-autobuild 2025.08.25, whose ``Builder.__call__`` starts
each rebuild as ``subprocess.run([sys.executable, "-m", "sphinx", "build", ...],
check=True)`` through its module's ``subprocess``. Retire it when
sphinx-autobuild lets its caller say how a build runs.

Not imported by ``_compat/__init__.py``: only ``make livehtml``
(``devkit/warm_autobuild.py``) uses it, and a build never imports sphinx-autobuild.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Sequence

import sphinx_autobuild.build

from autograd_docs._compat import patching


class _Subprocess:
    """The ``subprocess`` that sphinx_autobuild.build sees: its Sphinx command
    goes to ``run_sphinx`` (the arguments after ``python -m sphinx``), any other
    command (``--pre-build``, ``--post-build``) to subprocess (the module it
    replaced)."""

    CalledProcessError = subprocess.CalledProcessError

    def __init__(self, run_sphinx: Callable[[list[str]], int]) -> None:
        self.run_sphinx = run_sphinx

    def run(self, command: Sequence[str], *args, check: bool = False, **kwargs):
        if list(command[:3]) != [sys.executable, "-m", "sphinx"] or args or kwargs:
            return subprocess.run(command, *args, check=check, **kwargs)
        code = self.run_sphinx(list(command[3:]))
        if check and code:
            raise subprocess.CalledProcessError(code, command)
        return subprocess.CompletedProcess(command, code)


def run_sphinx_with(run_sphinx: Callable[[list[str]], int]) -> None:
    """From now on, sphinx-autobuild's rebuilds call ``run_sphinx(arguments)``
    and take what it returns as Sphinx's exit code."""
    patching.wrap(sphinx_autobuild.build, "subprocess", lambda _original: _Subprocess(run_sphinx))

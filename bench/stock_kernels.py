"""`make html` as the ecosystem runs pages, for `make bench`'s peer row: myst-nb's
own execution, nbclient starting a stock ipykernel (the venv's ``python3``
kernelspec) per page, cold.

Run in place of ``python -m sphinx`` (bench.py sets make's ``SPHINXBUILD``):
the engine loads as always, but leaves jupyter-cache's ``executenb`` as it is
and starts no fork server. The kernels inherit the environment the page runner
gives a page (snippets on the path, the fixed hash seed, claim records on).
"""

import os
import sys
from pathlib import Path

from sphinx.cmd.build import main

import autograd_docs._compat
import autograd_docs.kernels
from autograd_docs.kernels.environment import kernel_environment

autograd_docs._compat.wrap_executenb = lambda wrapper: None
autograd_docs.kernels.PageRunner.start = lambda self: None
os.environ.update(kernel_environment(Path.cwd(), Path("snippets").resolve()))
sys.exit(main(sys.argv[1:]))

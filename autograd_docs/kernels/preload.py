"""What the fork server imports before its first fork, and only imports.

Every child then starts from these modules already imported, instead of paying
for them (torch alone takes nearly two seconds) on every page.
"""

import gc
import importlib
import os

# What most pages' code imports lazily, measured: most of a page's own time went
# to imports. torch._dynamo takes 0.7 s and brings torch.fx, torch._subclasses
# and sympy, which torch.func's transforms and the oracle's FlopCounterMode
# import: 18 and 27 of 31 pages. All before the first fork, never while pages
# run: what a module does as it is imported (a warning, say) must happen for
# every page or for none, not only for the pages forked before the server got
# to it.
LAZY_IMPORTS = (
    "torch._dynamo",
    # What a page's first torch.compile(backend="aot_eager") imports (14 pages
    # and reader_settings.compiled_modules): AOTAutograd and the decompositions
    # it takes from inductor's lowering. Measured in a warm process: the first
    # compile 0.85 CPU-s without them, 0.11 with (a second compile: 0.06).
    "torch._functorch.aot_autograd",
    "torch._inductor.lowering",
    "torch.utils.flop_counter",
    "torch.utils.checkpoint",
    "torch.testing",
    "PIL.PngImagePlugin",
    "pygments.lexers.python",
    # oracle.check_property's (0.3 s), and the record of a quoting check
    "hypothesis",
    "hypothesis.strategies",
    "IPython.display",
    "autograd_docs.claim_record",
)


def preload() -> None:
    """Import what (nearly) every page imports. Import only: run nothing but one
    empty property (``_first_property``)."""
    # ipykernel sets this before a page can import matplotlib; matplotlib reads
    # it at import, so it must be set before the import here too.
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    import numpy  # noqa: F401
    import torch  # noqa: F401
    import matplotlib  # noqa: F401
    import matplotlib.pyplot  # noqa: F401
    import matplotlib.backends.backend_agg  # noqa: F401

    # Not matplotlib_inline.backend_inline: importing it hooks figures into the
    # running IPython shell, and there is none until the child starts one.
    import ipykernel.kernelapp  # noqa: F401
    import ipykernel.ipkernel  # noqa: F401
    import ipykernel.zmqshell  # noqa: F401

    # debugpy (0.07 s of every kernel start) warns on import about frozen
    # modules unless told not to validate files, as ipykernel's own kernelspec does.
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    import ipykernel.debugger  # noqa: F401
    import ipykernel.inprocess.manager  # noqa: F401  -- page_runner's kernel

    # What starting that kernel imports (its history database, its process
    # inspection, IPython's debugger), not to pay for them in every page.
    import bdb  # noqa: F401
    import psutil  # noqa: F401
    import sqlite3  # noqa: F401
    import page_runner  # noqa: F401

    for module in LAZY_IMPORTS:
        importlib.import_module(module)
    _first_property()
    # What Python's docs advise before forking without exec: move everything
    # imported so far out of the collector's way, so a kernel's garbage
    # collections neither walk torch's objects nor copy their memory pages.
    # (Measured: a full collection in a child, 0.24 s unfrozen, 0.0005 s frozen.
    # gc.get_objects() in a page lists only what the page itself created.)
    gc.freeze()


def _first_property() -> None:
    """Run one property that draws nothing. Hypothesis's first run in a process
    registers the random generators it seeds and restores, which costs a full
    garbage collection: 0.13 s that every page with a property check paid again.
    It draws nothing (no module's constants read, nothing written to disk) and
    gives the generators their states back, so a page draws the same members as
    in a fresh process (tests/test_fork_kernels.py's PRISTINE)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(database=None, derandomize=True, max_examples=1)
    @given(st.just(None))
    def draws_nothing(_) -> None:
        pass

    draws_nothing()

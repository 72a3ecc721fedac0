"""What the engine holds for one build only, in one typed place: the engine
keeps no state in module globals.

Most values are read when the builder starts (or, for ``notebooks``, when first
asked) by the part named beside them, and every page then uses them; others
are handed from one event to the next for the same page (``page_fingerprints``,
``claims_taken``) or from one build-finished handler to another (``drawing``).
They are kept on the Sphinx application (its one attribute ``ATTRIBUTE``), not
on the environment: the environment is saved with the build, while these are
made afresh by every build. Sphinx forks its parallel readers and writers, so
they see what was there before they started; what a reader adds stays in it.
Where upstream calls the engine with no application (myst-nb's
``create_client``, jupyter-cache's ``executenb``), the replacement is made per
build around the application (``_compat.patching.wrap``).
"""

from __future__ import annotations

import logging
import multiprocessing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nbformat import NotebookNode
    from sphinx.application import Sphinx

    from autograd_docs.html.repository import Repository
    from autograd_docs.html.svg_math import Drawing
    from autograd_docs.kept_record import KeptRecord

ATTRIBUTE = "autograd_docs_state"  # the one attribute the engine sets on the application


@dataclass(frozen=True)
class Settings:
    """The engine's configuration, as ``settings.py`` read and checked it."""

    snippets: Path  # absolute, an existing folder
    server_idle: float  # seconds, 0 to settings.IDLE_MAX


class Progress:
    """build_log.py's count of pages done out of pages to do, in memory shared
    with the forked readers."""

    def __init__(self, total: int, erase_line: bool) -> None:
        self.total = total
        self.erase = "\x1b[2K" if erase_line else ""
        self.done = multiprocessing.Value("i", 0)  # shared memory, a lock with it


@dataclass
class BuildState:
    # settings.py: the engine's configuration, read and checked at config-inited.
    settings: Settings | None = None
    # build_log.py: Sphinx's status stream (found at setup: while pages are read,
    # Sphinx and each parallel reader set handlers aside), pages done out of
    # pages to do, and every problem shown, in the order shown (main process).
    status_handler: logging.Handler = field(default_factory=logging.NullHandler)
    progress: Progress | None = None
    problems: list[str] = field(default_factory=list)
    # execution/__init__.py: a page's source path -> the fingerprint of what its
    # outputs depend on; set at source-read, read when myst-nb creates the
    # page's execution client (in the same reader process).
    page_fingerprints: dict[str, str] = field(default_factory=dict)
    # execution/claims.py: a page's source path -> the claims its checks proved,
    # from the moment its client is done until doctree-read files them in the
    # environment under the page's name (same reader process).
    claims_taken: dict[str, list[dict]] = field(default_factory=dict)
    # html/repository.py: the repository the site is built from, when known.
    repository: Repository | None = None
    # html/page_origin.py: docname -> the date (YYYY-MM-DD) its source last changed.
    dates: dict[str, str] = field(default_factory=dict)
    # _compat.page_notebook: (path, its mtime) -> the notebook myst-nb reads it as.
    notebooks: dict[tuple[str, int], NotebookNode | None] = field(default_factory=dict)
    # api_roles.py: the record of each API name checked against the installed
    # torch (its entries: "role name" -> the problem, or None), which this build adds to.
    api_names: KeptRecord | None = None
    # html/svg_math.py: the equations MathJax is drawing while the build finishes
    # (started early in build-finished, put in their pages late).
    drawing: Drawing | None = None


def of(app: Sphinx) -> BuildState:
    """This build's state, made (empty) on first use."""
    state: BuildState | None = getattr(app, ATTRIBUTE, None)
    if state is None:
        state = BuildState()
        setattr(app, ATTRIBUTE, state)
    return state

"""What the engine holds for one build only, in one typed place.

Most values are read when the builder starts (or, for ``notebooks``, when first
asked) by the part named beside them, and every page then uses them; ``drawing``
is handed from one build-finished handler to another. They are kept on the
Sphinx application (its one attribute ``ATTRIBUTE``), not on the environment:
the environment is saved with the build, while these are made afresh by every
build. Sphinx forks its parallel readers and writers, so they see what was
there before they started.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nbformat import NotebookNode
    from sphinx.application import Sphinx

    from autograd_docs.html.repository import Repository
    from autograd_docs.html.svg_math import Drawing
    from autograd_docs.kept_record import KeptRecord
    from autograd_docs.settings import Settings

ATTRIBUTE = "autograd_docs_state"  # the one attribute the engine sets on the application


@dataclass
class BuildState:
    # settings.py: the engine's configuration, read and checked at config-inited.
    settings: Settings | None = None
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

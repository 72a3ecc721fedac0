"""The build engine of "Autograd, explained": one Sphinx extension, in parts.

conf.py lists it once, as ``"autograd_docs"``; ``setup`` below loads the parts
in order. Each part is a Sphinx extension of its own and can be read alone. The
private hooks of every upstream they use are all in ``_compat/``; what they
keep for one build is in ``build_state.BuildState``; every mistake the build
reports is a member of ``diagnostics.AuthorError``.

From conf.py to where a page's cells run, five files read in order:

1. ``conf.py``: ``extensions`` lists ``"autograd_docs"``.
2. ``autograd_docs/__init__.py:setup``: loads ``PARTS``, among them
   ``autograd_docs.kernels``.
3. ``autograd_docs/kernels/__init__.py:setup``: wraps jupyter-cache's
   ``executenb`` (myst-nb's one call to execute a page) with
   ``PageRunner.executenb``; ``PageRunner.execute`` hands the page to
   ``page_client.execute_page``.
4. ``autograd_docs/kernels/page_client.py:execute_page``: has the page's process
   made (forked by the warm server, or started cold) to run
   ``page_runner.main``, and lets nbclient's ``execute`` read its messages.
5. ``autograd_docs/kernels/page_runner.py:run``: ``client.execute(cell["source"])``
   in ipykernel's shell, cell by cell. The cells run here.

How the process is made (``server.py``, ``child.py``, ``cold.py``) and what it
is sent (``wire.py``) are the kernels' own business: ``kernels/__init__.py``
says where each is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pages' kernels import autograd_docs.claim_record: keep it light
    from sphinx.application import Sphinx


# The parts, in the order ``setup`` loads them (``make livehtml`` imports them ahead,
# devkit/warm_autobuild.py). First: on a clean build, the fork server's imports
# overlap loading the rest.
PARTS = (
    "autograd_docs.settings",  # conf.py's values for the engine, checked
    "autograd_docs.kernels",  # the page runner; the fork server
    "autograd_docs.build_log",  # a line per page, problems at the end
    "myst_nb",  # the parts below hook into it
    "autograd_docs.execution",  # cache keys, cell checks
    "autograd_docs.reading_order",  # executed pages spread over readers
    "autograd_docs.saved_config",  # a no-change rebuild re-reads nothing
    "autograd_docs.authoring",  # refs, toctrees, includes, doctests
    "autograd_docs.api_roles",  # {py:func} and kin: checked, indexed
    "autograd_docs.html.svg_math",  # equations drawn to SVG
    "autograd_docs.html.code_tokens",  # no span for what looks plain
    "autograd_docs.html.notebooks",  # .ipynb downloads
    "autograd_docs.html.page_origin",  # torch, last change, edit links
    "autograd_docs.html.sitemap",  # sitemap.xml, robots.txt
    "autograd_docs.html.search",  # what search.html ranks pages with
    "autograd_docs.html.hidden_cells",  # axe: hidden cells named
    "autograd_docs.html.checked_claims",  # readers see what was proved
    "autograd_docs.html.reproducible",  # incremental builds equal clean
)


def setup(app: Sphinx) -> dict:
    for part in PARTS:
        app.setup_extension(part)
    # Imported here, not with the module: the kernels import the package (above).
    from importlib.metadata import version

    return {
        "version": version("autograd-docs"),  # pyproject.toml's, as installed
        "parallel_read_safe": True,
        "parallel_write_safe": True,
    }

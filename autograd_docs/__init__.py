"""The build engine of "Autograd, explained": one Sphinx extension, in parts.

conf.py lists it once, as ``"autograd_docs"``; ``setup`` below loads the parts
in order. Each part is a Sphinx extension of its own and can be read alone.
"""

from __future__ import annotations

from sphinx.application import Sphinx


def setup(app: Sphinx) -> dict:
    # First: on a clean build, the fork server's imports overlap loading the rest.
    app.setup_extension("autograd_docs.kernels")
    app.setup_extension("myst_nb")
    app.setup_extension("autograd_docs.execution")  # cache keys, author messages
    app.setup_extension("autograd_docs.html.svg_math")  # equations as SVG
    app.setup_extension("autograd_docs.html.notebooks")  # downloads, sitemap
    app.setup_extension("autograd_docs.html.hidden_cells")  # axe mends
    return {"parallel_read_safe": True, "parallel_write_safe": True}

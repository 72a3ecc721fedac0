"""Two builds of one commit write the same bytes: stylesheets in place early.

Sphinx adds ``?v=<checksum>`` to a stylesheet's link only if the file exists
when a page is written. myst-nb copies its stylesheet when the build finishes,
so pages of a clean build would link it without the checksum every later build
adds, and two builds of one commit would differ in every page. (The equations'
stylesheet gets the same treatment in ``svg_math``.)
"""

from __future__ import annotations

from pathlib import Path

from sphinx.application import Sphinx

from autograd_docs import _compat


def _copy_mystnb_css_first(app: Sphinx) -> None:
    if app.builder.format == "html":
        Path(app.outdir, "_static").mkdir(parents=True, exist_ok=True)
        _compat.add_mystnb_stylesheet(app)


def setup(app: Sphinx) -> dict:
    app.connect("builder-inited", _copy_mystnb_css_first)
    # An incremental build's searchindex.js is the one a clean build writes.
    _compat.complete_incremental_search_index()
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Mend what axe-core finds in the HTML that extensions write, at build time.

* myst-nb's hidden cells ("Show code cell content") are ``<details>`` whose
  ``<summary>`` carries ``aria-label="Toggle hidden content"``: a screen reader
  then announces a name that differs from the visible words (axe:
  label-content-name-mismatch). Here the summary is named by its visible text;
  the visitor copies myst-nb 1.4.0's HTML otherwise, and goes when myst-nb
  drops the aria-label (not yet reported upstream).
"""

from __future__ import annotations

from html import escape

from sphinx.application import Sphinx

from autograd_docs._compat import HIDDEN_CELL_NODE, depart_hidden_cell


def visit_hidden_cell(self, node) -> None:
    classes = " ".join(node["classes"])
    self.body.append(f'<details class="admonition hide {classes}">\n<summary>\n')
    self.body.append(f'<p class="collapsed admonition-title">{escape(node["prompt_show"])}</p>\n')
    self.body.append(f'<p class="expanded admonition-title">{escape(node["prompt_hide"])}</p>\n')
    self.body.append("</summary>\n")


def setup(app: Sphinx) -> dict:
    app.add_node(HIDDEN_CELL_NODE, override=True, html=(visit_hidden_cell, depart_hidden_cell))
    return {"parallel_read_safe": True, "parallel_write_safe": True}

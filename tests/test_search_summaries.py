"""A search result's summary keeps the equations of the sentence it quotes, as
text (``autograd_docs/html/search.py``): the review found 16 of 59 summaries
with holes where an equation was ("Take  and the loss . The gradient … is ,")."""

from __future__ import annotations

import pytest
from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document
from sphinx.search.en import SearchEnglish

from autograd_docs.html import search


@pytest.mark.parametrize("tex, text", [
    (r"v^\top J", "vᵀJ"),
    (r"\frac{\partial y}{\partial x}", "∂y/∂x"),
    (r"\mathbb{R}^n \to \mathbb{R}^m", "R^n → R^m"),
    (r"\sin x + \lVert z \rVert", "sin x + ‖z ‖"),
    (r"\begin{pmatrix} 1 & 0 \\ 0 & 1 \end{pmatrix}", "1 0 ; 0 1"),
    (r"\operatorname{diag}(f'(z))", "diag(f'(z))"),
])
def test_tex_reads_as_text(tex, text):
    assert search.tex_as_text(tex) == text


def test_a_summary_keeps_its_equations_and_the_words_keep_out_of_them():
    document = new_document("page", get_default_settings(Parser))
    section = nodes.section(ids=["seed"])
    section += nodes.title(text="The seed")
    section += nodes.paragraph("", "", nodes.Text("Take "), nodes.math(text=r"z = (1, 2)"),
                               nodes.Text(" and the loss "), nodes.math(text=r"L = \sum z"),
                               nodes.Text(". Its gradient is "), nodes.literal(text="x.grad"),
                               nodes.Text(", with respect to "), nodes.math(text="x"),
                               nodes.Text("."))
    document += section
    words = search.Words(SearchEnglish({}))
    facts = search.page_facts(document, words)["sections"][0]
    assert facts["summary"] == ("Take z = (1, 2) and the loss L = Σz. Its gradient is "
                                "x.grad, with respect to x.")
    assert "σ" not in facts["prose"] and "Σz" not in facts["prose"]  # ranked on words only

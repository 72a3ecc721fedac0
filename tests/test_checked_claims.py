"""The checked sentences a page shows its readers (autograd_docs/html/checked_claims.py):
which element each one is marked on, and the data the reveal reads.

The small site's test page has one quoting check; the browser tests
(tests/browser/test_browser_checked_claims.py) drive the reveal on the real site.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
import torch

from autograd_docs.execution.claims import read_claims_file
from autograd_docs.html.checked_claims import (
    ANY,
    DATA_ID,
    MATH,
    count_text,
    sentence_pattern,
    shown_in,
)

from site_copy import small_page

QUOTE = "comes back for the identity"


class _Page(HTMLParser):
    """The elements with an id, each with its classes and text; the claims' JSON."""

    def __init__(self):
        super().__init__()
        self.elements: dict[str, dict] = {}
        self.data: dict | None = None
        self._open: list[dict] = []
        self._in_data = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self._in_data = tag == "script" and attrs.get("id") == DATA_ID
        if tag == "p":
            self._open.append({"id": attrs.get("id"), "classes": (attrs.get("class") or "").split(),
                               "text": ""})

    def handle_endtag(self, tag):
        if tag == "p" and self._open:
            element = self._open.pop()
            if element["id"]:
                self.elements[element["id"]] = element

    def handle_data(self, data):
        if self._in_data:
            self.data = json.loads(data)
            self._in_data = False
        for element in self._open:
            element["text"] += data


@pytest.mark.build
def test_the_sentence_a_check_quotes_is_marked_with_what_proved_it(built_copy):
    html = (built_copy / "_build" / "html" / "test-page.html").read_text(encoding="utf8")
    page = _Page()
    page.feed(html)
    assert page.data is not None, "test-page.html has no checked-claims data"
    [claim] = page.data["claims"]
    element = page.elements.get(claim["target"])
    assert element is not None, f"no paragraph has the id {claim['target']!r}"
    assert "checked-claim" in element["classes"]
    assert QUOTE in " ".join(element["text"].split()), (
        f"the claim is marked on a paragraph that does not say it: {element['text']!r}")

    source = small_page("test-page").splitlines()
    check_line = next(number for number, line in enumerate(source, 1)
                      if f'quote="{QUOTE}"' in line)
    assert (claim["check"], claim["check_line"], claim["torch"]) == (
        "check_close", check_line, torch.__version__)
    assert page.data["source"] == {"href": "_sources/test-page.md.txt", "name": "test-page.md",
                                   "lines": "_source-lines/test-page.md.html"}
    # What the reveal says: the scope, what was compared, the words no check quotes.
    assert claim["scope"] == "example" and claim["runs"] == 1
    assert claim["compared"].startswith("`z.grad` = tensor([-1.0000, -0.5000")
    assert claim["outside"] == ["seed", "torch", "Tensor", "backward"]
    # The link opens a numbered view of the source at the check's line.
    numbered = (built_copy / "_build" / "html" / "_source-lines" / "test-page.md.html"
                ).read_text(encoding="utf8")
    at = numbered.index(f'id="L-{check_line}"')
    assert "quote=" in numbered[at : numbered.index("\n", at)]
    assert 'href="../test-page.html"' in numbered
    recorded = read_claims_file(built_copy / "_build" / "doctrees")["test-page"]
    assert [c["check_line"] for c in recorded] == [check_line]
    # The sentence is found in the text the browser shows (roles rendered, no markup).
    assert re.search(claim["pattern"], element["text"]), (claim["pattern"], element["text"])
    # The toggle is in the HTML from the start, with the script and stylesheet.
    assert 'class="view-this-page checked-claims-toggle"' in html
    assert "_static/claims.js" in html and "_static/claims.css" in html


@pytest.mark.build
def test_a_page_without_claims_gets_no_toggle(built_copy):
    # The copy's landing page: a title and a toctree, nothing to check.
    assert not read_claims_file(built_copy / "_build" / "doctrees").get("index")
    html = (built_copy / "_build" / "html" / "index.html").read_text(encoding="utf8")
    assert "checked-claims" not in html and "claims.js" not in html


@pytest.mark.parametrize("quote, shown", [
    ("The {term}`seed` of {py:meth}`torch.Tensor.backward` comes back",
     "The seed of torch.Tensor.backward() comes back"),
    ("for $y = z$ the {term}`Jacobian <jacobian>` $J$ is the identity",
     f"for {MATH} the Jacobian {MATH} is the identity"),
    ("`z.grad` then holds\nevery $dy_i/dz_i$", f"z.grad then holds every {MATH}"),
    ("a new tensor sharing `t`'s storage, *no* graph", "a new tensor sharing t’s storage, no graph"),
    ("2 * 3 is six -- and requires_grad stays", "2 * 3 is six – and requires_grad stays"),
    ("[PyTorch's docs](https://pytorch.org) say so", "PyTorch’s docs say so"),
])
def test_a_quote_becomes_a_pattern_for_the_text_the_page_shows(quote, shown):
    assert re.fullmatch(sentence_pattern(quote), shown), sentence_pattern(quote)


def test_text_the_build_cannot_know_matches_anything_inside_never_at_the_ends():
    pattern = sentence_pattern("{{ torch_version }} ran it, see {ref}`seed` for why {{ x }}")
    assert pattern.startswith("ran") and pattern.endswith("why") and ANY in pattern


def test_a_count_in_prose_is_the_number_make_claims_prints():
    from collections import Counter

    from autograd_docs import claim_sentences as cs

    counts = {"total": Counter({cs.FAMILY: 3, cs.EXAMPLE: 5, cs.PARTLY: 1, cs.UNCHECKED: 1,
                                cs.GENERAL_ON_EXAMPLE: 2, "% rhetoric": 4}),
              "how-to": Counter({cs.EXAMPLE: 1, cs.UNCHECKED: 1})}
    assert count_text(counts, "coverage") == "8 of 10 (80%)"
    assert count_text(counts, "how-to: coverage") == "1 of 2 (50%)"
    assert (count_text(counts, "counted"), count_text(counts, "generalising")) == ("10", "2")
    assert count_text(counts, "partly checked") == "1" and count_text(counts, "% rhetoric") == "4"
    assert count_text(counts, "proven overall") is None
    assert count_text(counts, "tutorial: coverage") is None


def test_a_numbered_source_goes_when_no_check_quotes_its_page_any_more(tmp_path):
    """reproducible.py removes the numbered source of a page that is gone or whose
    checks no longer quote it: a clean build writes none for it."""
    from types import SimpleNamespace

    from autograd_docs.html.reproducible import _stale_source_lines

    folder = tmp_path / "_source-lines"
    for name in ("quoted.md", "how-to/unquoted.md", "removed.md"):
        (folder / f"{name}.html").parent.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.html").write_text("numbered", encoding="utf8")
    env = SimpleNamespace(srcdir=str(tmp_path / "docs"), autograd_docs_claims={
        "quoted": [{"quote": "a sentence"}], "how-to/unquoted": []})
    env.path2doc = lambda path: Path(path).relative_to(env.srcdir).with_suffix("").as_posix()
    assert sorted(p.relative_to(folder).as_posix() for p in _stale_source_lines(env, folder)) == [
        "how-to/unquoted.md.html", "removed.md.html"]


def test_a_quote_over_a_table_rows_cells_marks_each_cell_with_its_own_words():
    """No one cell says a row, so each cell the quote covers is marked, in the
    row's order, with the words it shows: never a neighbouring cell, whole."""
    from docutils import nodes

    def cells(line, *texts):
        made = [nodes.paragraph(text, text) for text in texts]
        for cell in made:
            cell.line = line
            nodes.entry("", cell)
        return [(cell, text) for cell, text in zip(made, texts, strict=True)]

    header = cells(10, "tool", "result")
    above = cells(12, "`t.detach()`", "no graph")
    row = cells(13, "`p.requires_grad_(False)`", "a leaf (a parameter)", "no graph, stops")
    elements = header + above + row
    claim = {"quote": "| `p.requires_grad_(False)` | a leaf (a parameter) | no graph",
             "sentence_line": 13}
    assert [(node.astext(), words) for node, words in shown_in(elements, claim)] == [
        ("`p.requires_grad_(False)`", "`p.requires_grad_(False)`"),
        ("a leaf (a parameter)", "a leaf (a parameter)"),
        ("no graph, stops", "no graph")]
    one_cell = {"quote": "a leaf", "sentence_line": 13}
    assert [words for _, words in shown_in(elements, one_cell)] == ["a leaf"]
    # Outside a table a "|" is no cell's edge: the quote stays whole.
    prose = cells(20, "where $|a| > 1$ it", "grows")
    for paragraph, _ in prose:
        paragraph.parent = None
    over_two = {"quote": "$|a| > 1$ it grows", "sentence_line": 20}
    assert [words for _, words in shown_in(elements + prose, over_two)] == [over_two["quote"]]
